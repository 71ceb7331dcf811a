"""The text ``gen import`` writes: the imported InferenceDeployment as YAML, with a header that
names the manifests it came from and what could not be carried over (the IMP findings)."""

from __future__ import annotations

from .build import Imported

MARKER = "# Imported by gen import"


def spec_yaml(imported: Imported) -> str:
    """YAML of ``imported`` (keys in spec order; the header is comment lines)."""
    import yaml
    head = [f"{MARKER} from {', '.join(imported.files)}.",
            "# Check it with gen validate; render it with gen render."]
    for issue in imported.issues:
        loc = issue.location
        where = f"{loc.file}:{loc.line}" if loc.line else loc.file
        head.append(f"# not carried over ({issue.code}, {where}): {issue.message}")
    text = yaml.safe_dump(imported.data, sort_keys=False, allow_unicode=True, width=100)
    return "\n".join(_one_line(h) for h in head) + "\n" + text


def _one_line(text: str) -> str:
    return " ".join(text.split())
