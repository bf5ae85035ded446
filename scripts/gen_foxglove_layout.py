#!/usr/bin/env python3
"""Generate ``config/foxglove/robot_team.json``, the Foxglove layout of a run (live or recorded).

Usage: ``python scripts/gen_foxglove_layout.py [output.json]`` (default: the file above). The
layout is built with ``foxglove.layouts`` (:func:`robot_team.scene_foxglove.layout`): a 3D
panel on ``/team/scene``, a Log panel on ``/team/log`` and a Table panel on ``/team/cases``.
The output is deterministic; commit the regenerated file (``test/test_scene_foxglove.py``
checks it is up to date). Import it in Foxglove with Layouts > Import from file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))   # this checkout's robot_team, not an installed one

from robot_team.scene_foxglove import LAYOUT_FILE, layout  # noqa: E402


def main(argv: list[str]) -> int:
    """Write the layout (pretty-printed JSON) to ``argv[0]`` or the repository's file."""
    out = Path(argv[0]) if argv else ROOT / LAYOUT_FILE
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(json.loads(layout().to_json()), indent=2) + '\n', encoding='utf-8')
    print(out)
    return 0


if __name__ == '__main__':
    raise SystemExit(main(sys.argv[1:]))
