"""One error hierarchy (ragqa/errors.py), mapped in one place: a user error is exit 2 and an HTTP
4xx, a service error exit 1 and HTTP 503, anything else a bug (exit 1, HTTP 500, its message
withheld). Each face uses these functions and defines no mapping of its own."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from ragqa import errors
from ragqa.errors import error_message, exit_code, http_status
from ragqa.requests import SearchRequest, SummarizeRequest

USER = {"UserError": 400, "NotFound": 404, "TooLarge": 413, "InvalidField": 422,
        "ConfigError": 400, "CorpusError": 400, "IndexMismatchError": 400, "MissingExtra": 501}
SERVICE = {"ServiceError", "StoreError", "SnapshotError", "LockTimeout", "EmbeddingError",
           "RerankError", "GlossaryError", "LLMError", "DiskFullError"}


def _make(cls: type) -> BaseException:
    return cls("f.jsonl", 3, "bad") if cls is errors.CorpusError else cls("message")


@pytest.mark.parametrize("name,status", sorted(USER.items()))
def test_user_errors_exit_2_with_their_http_status(name, status):
    exc = _make(getattr(errors, name))
    assert (exit_code(exc), http_status(exc)) == (2, status)
    assert error_message(exc) == str(exc)


@pytest.mark.parametrize("name", sorted(SERVICE))
def test_service_errors_exit_1_and_answer_503(name):
    exc = _make(getattr(errors, name))
    assert (exit_code(exc), http_status(exc)) == (1, 503)


def test_every_error_class_is_one_of_the_two_kinds_and_none_borrows_from_a_sibling():
    classes = {n: c for n, c in inspect.getmembers(errors, inspect.isclass)
               if issubclass(c, errors.RagqaError) and c is not errors.RagqaError}
    assert set(classes) == set(USER) | SERVICE
    for name, cls in classes.items():
        # a leaf's parent is its kind (or, for the statuses, UserError): never another leaf
        parent = cls.__mro__[1]
        assert parent in (errors.RagqaError, errors.UserError, errors.ServiceError), name


def test_a_bug_is_a_500_whose_message_is_withheld():
    exc = KeyError("/home/alice/secret-path")
    assert (exit_code(exc), http_status(exc)) == (None, 500)
    assert error_message(exc) == "internal error: KeyError"


def test_a_bare_os_error_is_a_runtime_failure():
    assert exit_code(OSError(28, "No space left on device")) == 1


def test_requests_raise_user_errors_with_the_field_status():
    with pytest.raises(errors.InvalidField, match="year must be at most 9999"):
        SearchRequest(question="speech", year=10**30)
    with pytest.raises(errors.InvalidField, match="k must be at least 1"):
        SearchRequest(question="speech", k=0)
    with pytest.raises(errors.UserError, match="the question is empty"):
        SearchRequest(question="  \x1b[2J ")
    with pytest.raises(errors.UserError, match="one of them"):
        SummarizeRequest(topic="speech", all=True)


def test_no_face_maps_errors_by_itself():
    """The faces call errors.exit_code / http_status / error_message: none of them compares
    class names or defines its own table."""
    faces = Path(errors.__file__).parent / "faces"
    for path in faces.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "__mro__":
                raise AssertionError(f"{path.name} reads __mro__ to map an error")
            if isinstance(node, ast.FunctionDef):
                assert node.name not in ("error_status", "_exit_code"), path.name
