"""A small in-memory map whose entries expire, bounded in size (oldest entries go first)."""
from __future__ import annotations

import time
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class TTLCache(Generic[K, V]):
    def __init__(self, ttl_s: float, max_items: int = 10_000) -> None:
        self.ttl_s = ttl_s
        self.max_items = max_items
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K) -> V | None:
        item = self._items.get(key)
        if item is None:
            return None
        expires, value = item
        if expires < time.monotonic():
            del self._items[key]
            return None
        return value

    def set(self, key: K, value: V) -> None:
        self._items.pop(key, None)
        self._items[key] = (time.monotonic() + self.ttl_s, value)
        while len(self._items) > self.max_items:
            self._items.popitem(last=False)

    def discard(self, key: K) -> None:
        self._items.pop(key, None)

    def keys(self) -> list[K]:
        return list(self._items)

    def add(self, key: K, value: V) -> bool:
        """Set `key` unless it is present and fresh; True when this call added it."""
        if self.get(key) is not None:
            return False
        self.set(key, value)
        return True
