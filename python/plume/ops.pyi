"""Type information for plume.ops, whose functions are made at import from the library's
op table (plume._ops): a type checker sees each as an OpFunction, its parameters the
text form's keys (help(plume.ops.NAME) and docs/python.md list them)."""

from typing import Any, List, Optional, Protocol

from ._context import Context, Stream

class OpFunction(Protocol):
    def __call__(self, array: Any, /, *, out: Any = ..., context: Optional[Context] = ...,
                 stream: Optional[Stream] = ..., as_tensor: bool = ...,
                 **params: Any) -> Any: ...

__all__: List[str]

def __getattr__(name: str) -> OpFunction: ...
