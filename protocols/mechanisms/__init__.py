"""Answer mechanisms: one module per protocol, each registering itself with ``@register_protocol``."""
