"""Sequences of pydantic models held in a compact form and made into models when read.

Owns `MadeWhenRead`: what a model field of such a type validates (the sequence itself, or a
list of the models or of their dicts, from Python or JSON), how it dumps (a list of dicts, as
the list of models would, made without the models), and the read-only sequence protocol
over the models once made. A day-long log has millions of phase blocks (`model.Blocks`) and
hundreds of thousands of outliers (`analysis.Outliers`): a model each would hold 300–600
bytes. It must not parse or compute.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, TypeVar, overload

from pydantic import BaseModel, GetCoreSchemaHandler
from pydantic_core import core_schema

M = TypeVar("M", bound=BaseModel)


class MadeWhenRead(Sequence[M]):
    """A sequence of `_item` models: `_all` makes (and may keep) them, `_dumped` gives their
    dicts without making them, `__len__` counts them without making them; a subclass's
    constructor takes a list of the models as its first argument."""

    __slots__ = ()
    _item: ClassVar[type[BaseModel]]

    def __init__(self, given: Any = ()) -> None:  # each subclass has its own
        raise NotImplementedError

    def _all(self) -> list[M]:
        raise NotImplementedError

    def _dumped(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        items = core_schema.list_schema(handler.generate_schema(cls._item))
        return core_schema.json_or_python_schema(
            json_schema=core_schema.no_info_after_validator_function(cls._of, items),
            python_schema=core_schema.no_info_after_validator_function(
                cls._of, core_schema.union_schema([core_schema.is_instance_schema(cls), items])
            ),
            serialization=core_schema.plain_serializer_function_ser_schema(
                cls._dumped, info_arg=False, return_schema=core_schema.list_schema()
            ),
        )

    @classmethod
    def _of(cls, value: Any) -> Any:
        return value if isinstance(value, cls) else cls(value)

    @overload
    def __getitem__(self, i: int) -> M: ...

    @overload
    def __getitem__(self, i: slice) -> list[M]: ...

    def __getitem__(self, i: int | slice) -> M | list[M]:
        return self._all()[i]

    def __iter__(self) -> Iterator[M]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MadeWhenRead):
            return type(other) is type(self) and self._all() == other._all()
        return isinstance(other, list) and self._all() == other

    def __hash__(self) -> int:
        raise TypeError(f"unhashable type: {type(self).__name__!r}")

    def __repr__(self) -> str:
        return repr(self._all())
