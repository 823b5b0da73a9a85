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

  var agentName = events.dataset.agent || "agent";
  var replies = {};  // "taskId/artifactId" -> the reply its chunks grow (the page's own first)
  events.querySelectorAll("[data-reply]").forEach(function (reply) { replies[reply.dataset.reply] = reply; });

  function partText(part) {
    if (part.text !== undefined) return part.text;
    if (part.data !== undefined) return JSON.stringify(part.data, null, 2);
    return "[file " + (part.filename || part.url || "") + "]";
  }

  function textOf(parts) { return (parts || []).map(partText).join(" "); }

  // A message of the conversation: who says it, then its parts (text as it is, so that
  // chunks appended later join it; data and files on lines of their own).
  function bubble(role, extra, who) {
    var item = document.createElement("li");
    item.className = "message " + role + (extra ? " " + extra : "");
    var label = document.createElement("span");
    label.className = "who";
    label.textContent = who;
    var body = document.createElement("div");
    body.className = "body";
    item.appendChild(label);
    item.appendChild(body);
    events.appendChild(item);
    return item;
  }

  function addParts(item, parts) {
    var body = item.querySelector(".body");
    (parts || []).forEach(function (part) {
      if (part.text !== undefined) { body.appendChild(document.createTextNode(part.text)); return; }
      var pre = document.createElement("pre");
      pre.textContent = partText(part);
      body.appendChild(pre);
    });
    return item;
  }

  // A status line, only for a status that carries a message.
  function statusLine(state, text) {
    var item = document.createElement("li");
    item.className = "status";
    var strong = document.createElement("strong");
    strong.textContent = state;
    item.appendChild(strong);
    item.appendChild(document.createTextNode(": " + text));
    events.appendChild(item);
  }

  // An artifact's chunk: a new reply, or (append) more of the reply it grows, in place.
  function showArtifact(taskId, update) {
    var artifact = update.artifact;
    var key = taskId + "/" + artifact.artifactId;
    var reply = replies[key];
    if (reply && !update.append) {
      reply.querySelector(".body").textContent = "";  // replaced
    } else if (!reply) {
      reply = replies[key] = bubble("agent", "artifact", agentName + (artifact.name ? " · " + artifact.name : ""));
      reply.dataset.reply = key;
    }
    addParts(reply, artifact.parts);
    reply.classList.toggle("streaming", !update.lastChunk);
  }

  function finishReplies() {
    events.querySelectorAll(".streaming").forEach(function (reply) { reply.classList.remove("streaming"); });
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

  function showStatus(taskId, status) {
    var state = STATES[status.state] || status.state;
    setState(taskId, state);
    var message = status.message;
    var answerable = state === "input-required" || state === "auth-required";
    if (answerable || FINAL.indexOf(state) >= 0) finishReplies();
    if (!message || !(message.parts || []).length) return;
    if (answerable) { addParts(bubble("agent", "question", agentName), message.parts); return; }
    var text = textOf(message.parts);
    var remote = message.referenceTaskIds;
    if (remote && remote.length) text += " (remote task " + remote.join(", ") + ")";  // a delegation's
    statusLine(state, text);
  }

  function show(event) {
    if (event.task) {  // the task as it stands: what it already holds joins the conversation
      var task = event.task;
      form.elements.contextId.value = task.contextId || "";
      (task.artifacts || []).forEach(function (artifact) {
        showArtifact(task.id, { artifact: artifact, append: false, lastChunk: true });
      });
      showStatus(task.id, task.status);
    } else if (event.statusUpdate) {
      showStatus(event.statusUpdate.taskId, event.statusUpdate.status);
    } else if (event.artifactUpdate) {
      showArtifact(event.artifactUpdate.taskId, event.artifactUpdate);
    } else if (event.message) {
      section.hidden = false;
      addParts(bubble("agent", "", agentName), event.message.parts);
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
    var hadTask = !section.hidden;
    section.hidden = false;
    var mine = addParts(bubble("user", "", "you"), [{ text: body.get("text") + (file ? " [file " + file.name + "]" : "") }]);
    sendButton.disabled = true;
    var old = document.getElementById("error");
    if (old) old.remove();
    // Refused (or never sent): the message leaves the conversation, the form keeps what
    // was typed and attached, and a task box that was empty is hidden again.
    function unsent(message) {
      mine.remove();
      section.hidden = !hadTask;
      showError(message);
    }
    try {
      var response = await fetch(form.dataset.streamUrl, {
        method: "POST", body: body, headers: { "X-CSRFToken": csrf }, credentials: "same-origin"
      });
      if (!response.ok) {
        var failure = await response.text();
        try { unsent(JSON.parse(failure).error.message); } catch (e) { unsent(failure || response.statusText); }
        return;
      }
      form.elements.text.value = "";  // taken: the form is ready for the next message
      form.elements.file.value = "";
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
      finishReplies();
      statusLine(state, "canceled from this page");
    });
  }
})();
