"""The generic base of every plug-in class: a ``name``, a ``Params`` model and ``params``, its instance.

A family's base subclasses :class:`Plugin` with its own type variable
(``class Protocol(Plugin[P], ABC)``) and a plug-in names its model twice, once
for type checkers and once for the registry::

    class LaplaceProtocol(Protocol[LaplaceParams]):
        name = "laplace"
        Params = LaplaceParams

so ``self.params.epsilon`` is checked against ``LaplaceParams``. The contract test
(tests/unit/test_plugin_contract.py) keeps the two in step. Each family's type variable
defaults to its base model, so a bare ``Protocol`` (an annotation, a third-party plug-in)
types ``params`` as ``ProtocolParams``; it is covariant (``params`` is set once, in
``__init__``, and only read), so a ``LaplaceProtocol`` is a ``Protocol``.
"""

from __future__ import annotations

from typing import ClassVar, Generic

from pydantic import BaseModel
from typing_extensions import TypeVar  # default= (PEP 696); typing's from Python 3.13

__all__ = ["P", "Plugin"]

#: The parameter model of a plug-in; a bare ``Plugin`` means ``Plugin[BaseModel]``.
P = TypeVar("P", bound=BaseModel, default=BaseModel, covariant=True)


class Plugin(Generic[P]):
    """Base of the plug-in families: protocols, attacks, learners and data sets.

    Attributes
    ----------
    name : str
        The name the plug-in is registered, and named in a scenario, under.
    Params : type[BaseModel]
        The model a scenario's table is validated against (what the registry reads).
    params : P
        An instance of ``Params``, set by the family's ``__init__``.
    """

    name: ClassVar[str]
    Params: ClassVar[type[BaseModel]]
    params: P
