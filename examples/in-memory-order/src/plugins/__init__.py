"""A tiny plugin registry: module-level state that lives as long as the interpreter."""

_REGISTRY = {}


def register(name, factory):
    _REGISTRY[name] = factory


def lookup(name):
    try:
        return _REGISTRY[name]
    except KeyError:
        raise LookupError(f"no plugin registered as {name!r}") from None


def names():
    return sorted(_REGISTRY)
