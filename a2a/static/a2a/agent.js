// The browsable agent's small script (a2a/http/browse.py): the form goes to the page's
// stream endpoint instead, and the SSE events (v1.0 JSON) are shown as they arrive.
// Without it the form still works: the page sends the message and shows the task.
(function () {
  "use strict";
  var form = document.getElementById("send");
  if (!form || !window.fetch || !window.ReadableStream || !window.TextDecoder) return;

  var STATES = {
    TASK_STATE_SUBMITTED: "submitted", TASK_STATE_WORKING: "working", TASK_STATE_COMPLETED: "completed",
    TASK_STATE_FAILED: "failed", TASK_STATE_CANCELED: "canceled", TASK_STATE_INPUT_REQUIRED: "input-required",
    TASK_STATE_REJECTED: "rejected", TASK_STATE_AUTH_REQUIRED: "auth-required", TASK_STATE_UNSPECIFIED: "unknown"
  };
  var FINAL = ["completed", "failed", "canceled", "rejected"];
  var section = document.getElementById("task");
  var events = document.getElementById("events");
  var stateBadge = document.getElementById("task-state");
  var taskIdText = document.getElementById("task-id");
  var adminLink = document.getElementById("admin-link");
  var cancelForm = document.getElementById("cancel-form");
  var cancelButton = document.getElementById("cancel-button");
  var sendButton = document.getElementById("send-button");
  var prompt = document.getElementById("prompt");
  var csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  var current = { id: taskIdText.textContent.trim(), state: stateBadge.textContent.trim() };

  function partText(part) {
    if (part.text !== undefined) return part.text;
    if (part.data !== undefined) return JSON.stringify(part.data);
    return "[file " + (part.filename || part.url || "") + "]";
  }

  function textOf(parts) { return (parts || []).map(partText).join(" "); }

  function add(kind, label, text) {
    var item = document.createElement("li");
    item.className = kind;
    var strong = document.createElement("strong");
    strong.textContent = label;
    item.appendChild(strong);
    if (text) item.appendChild(document.createTextNode(": " + text));
    events.appendChild(item);
    return item;
  }

  function showError(message) {
    var box = document.getElementById("error");
    if (!box) {
      box = document.createElement("p");
      box.id = "error";
      box.className = "error";
      form.parentNode.insertBefore(box, form);
    }
    box.textContent = message;
  }

  function setState(task, state) {
    current.id = task;
    current.state = state;
    section.hidden = false;
    taskIdText.textContent = task;
    stateBadge.textContent = state;
    stateBadge.className = "state state-" + state;
    var final = FINAL.indexOf(state) >= 0;
    var answerable = state === "input-required" || state === "auth-required";
    if (cancelButton) cancelButton.disabled = final;
    if (cancelForm) cancelForm.elements.taskId.value = task;
    form.elements.taskId.value = answerable ? task : "";
    prompt.textContent = answerable ? "Your answer to the agent's question" : "Message";
    sendButton.textContent = answerable ? "Answer" : "Send";
    var template = form.dataset.adminUrl;
    if (template && task) {
      adminLink.href = template.replace("TASKID", encodeURIComponent(task));
      adminLink.hidden = false;
    }
  }

  function show(event) {
    if (event.task) {
      var task = event.task;
      form.elements.contextId.value = task.contextId || "";
      setState(task.id, STATES[task.status.state] || task.status.state);
      add("status", STATES[task.status.state] || "task", "task " + task.id);
    } else if (event.statusUpdate) {
      var update = event.statusUpdate;
      var state = STATES[update.status.state] || update.status.state;
      setState(update.taskId, state);
      var text = update.status.message ? textOf(update.status.message.parts) : "";
      var remote = update.status.message && update.status.message.referenceTaskIds;
      if (remote && remote.length) text += " (remote task " + remote.join(", ") + ")";  // a delegation's
      add(state === "input-required" ? "question" : "status", state, text);
    } else if (event.artifactUpdate) {
      var artifact = event.artifactUpdate.artifact;
      add("artifact", "artifact " + (artifact.name || artifact.artifactId), textOf(artifact.parts));
    } else if (event.message) {
      section.hidden = false;
      add("agent", "reply", textOf(event.message.parts));
    } else if (event.error) {
      showError(event.error.message);
    }
  }

  async function readStream(response) {
    var reader = response.body.getReader();
    var decoder = new TextDecoder();
    var buffer = "";
    for (;;) {
      var chunk = await reader.read();
      if (chunk.done) break;
      buffer += decoder.decode(chunk.value, { stream: true });
      var frames = buffer.split("\n\n");
      buffer = frames.pop();
      frames.forEach(function (frame) {
        var data = frame.split("\n").filter(function (line) { return line.indexOf("data: ") === 0; })
          .map(function (line) { return line.slice(6); }).join("\n");
        if (data) show(JSON.parse(data));
      });
    }
  }

  form.addEventListener("submit", async function (submit) {
    submit.preventDefault();
    var body = new FormData(form);
    var file = form.elements.file.files[0];
    if (!body.get("text").trim() && !file) { showError("Type a message or attach a file"); return; }
    if (!form.elements.taskId.value) { events.textContent = ""; }
    add("user", "you", body.get("text") + (file ? " [file " + file.name + "]" : ""));
    sendButton.disabled = true;
    form.elements.text.value = "";
    form.elements.file.value = "";
    var old = document.getElementById("error");
    if (old) old.remove();
    try {
      var response = await fetch(form.dataset.streamUrl, {
        method: "POST", body: body, headers: { "X-CSRFToken": csrf }, credentials: "same-origin"
      });
      if (!response.ok) {
        var failure = await response.text();
        try { showError(JSON.parse(failure).error.message); } catch (e) { showError(failure || response.statusText); }
        return;
      }
      await readStream(response);
    } catch (error) {
      showError(String(error));
    } finally {
      sendButton.disabled = false;
    }
  });

  if (cancelForm) {
    cancelForm.addEventListener("submit", async function (submit) {
      submit.preventDefault();
      if (!current.id) return;
      var body = new FormData();
      body.append("taskId", current.id);
      var response = await fetch(form.dataset.cancelUrl, {
        method: "POST", body: body, credentials: "same-origin",
        headers: { "X-CSRFToken": csrf, "Accept": "application/json" }
      });
      var answer = await response.json();
      if (answer.error) { showError(answer.error.message); return; }
      var state = STATES[answer.task.status.state];
      setState(answer.task.id, state);
      add("status", state, "canceled from this page");
    });
  }
})();
