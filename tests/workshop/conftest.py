"""A workshop room shared by the module's tests: building a participant's world trains a base model (~1 s)."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette", reason="the workshop extra (starlette) is not installed")
