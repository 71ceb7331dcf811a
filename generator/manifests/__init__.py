"""The deployment plan (every object, name and number) and the files rendered from it."""
