"""``python -m generator`` = ``gen``."""

from .cli import console

console()
