"""Checks of rendered engine command lines against the engines' real argument parsers."""
