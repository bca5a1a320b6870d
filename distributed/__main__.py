"""``python -m plait.dbos runs ...`` / ``python -m plait.dbos worker ...``."""

from __future__ import annotations

from ._cli import main

raise SystemExit(main())
