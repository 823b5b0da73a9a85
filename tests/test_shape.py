"""The code keeps its shape: no module over 600 lines, no function over 60, no copied
block of 10 lines or more in ``a2a/``, ``stores/`` and ``tests/``, and no module cut from
another at a line to get under the limit (named as its continuation, ``*_sections``,
``*_part2``, ``*_more``, or a docstring owning that it was split off to stay short): a
module too long is split by idea (counted by ``tests/shape.py``; ``make shape`` prints
every count)."""

from __future__ import annotations

import pytest

from tests import shape


@pytest.fixture(scope="module")
def findings() -> dict[str, list]:
    return shape.report()


def test_no_module_over_600_lines(findings):
    assert findings[f"modules over {shape.MAX_MODULE_LINES} lines"] == []


def test_no_module_cut_at_a_line(findings):
    assert findings["modules cut at a line, not split by idea"] == []


def test_no_function_over_60_lines(findings):
    assert findings[f"functions over {shape.MAX_FUNCTION_LINES} lines"] == []


def test_no_copied_block(findings):
    assert findings[f"copied blocks of {shape.MIN_COPY_LINES}+ lines"] == []


def test_the_counter_finds_what_it_counts(tmp_path, monkeypatch):
    """A long module, a long function and a copied block, written here, are each found."""
    package = tmp_path / "a2a"
    package.mkdir()
    body = "\n".join(f"    value_{i} = {i}" for i in range(61))
    (package / "long.py").write_text(f"def long():\n{body}\n" + "\n" * 600)
    block = "\n".join(f"result_{i} = first_{i}.call(second_{i}, {i})" for i in range(12))
    (package / "one.py").write_text(block + "\n")
    (package / "two.py").write_text(block.replace("result", "answer") + "\n")
    monkeypatch.setattr(shape, "ROOT", tmp_path)
    found = shape.report()
    assert [p.path for p in found[f"modules over {shape.MAX_MODULE_LINES} lines"]] == ["a2a/long.py"]
    assert [p.what for p in found[f"functions over {shape.MAX_FUNCTION_LINES} lines"]] == ["def long"]
    [(first, copy)] = found[f"copied blocks of {shape.MIN_COPY_LINES}+ lines"]
    assert {first.path, copy.path} == {"a2a/one.py", "a2a/two.py"}


@pytest.mark.parametrize(
    "name, docstring",
    [
        ("conf_sections", "The last sections of a2a.conf.SECTIONS."),
        ("checks_part2", "More checks."),
        ("views_more", "More views."),
        ("models_2", "More models."),
        ("file_checks", "The file-part check, apart from a2a/ops/checks.py for its size."),
        ("declarations", "Declared here to keep a2a/conf.py within the module size limit."),
    ],
)
def test_a_module_cut_at_a_line_is_found(tmp_path, monkeypatch, name, docstring):
    """A module named as another's continuation, or kept apart for its size, is found;
    one named for its idea (a protocol version's ``v03`` too) is not."""
    package = tmp_path / "a2a"
    package.mkdir()
    (package / f"{name}.py").write_text(f'"""{docstring}"""\n')
    for fine in ("checks", "v03", "test_rest_v03", "sections_of_a_card"):
        (package / f"{fine}.py").write_text('"""One idea, within the limits."""\n')
    monkeypatch.setattr(shape, "ROOT", tmp_path)
    found = shape.report()["modules cut at a line, not split by idea"]
    assert [p.path for p in found] == [f"a2a/{name}.py"]
