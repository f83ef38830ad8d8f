"""Stand-in SLURM and PBS commands (:mod:`._fake`) for the cluster tests."""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMANDS = ("sbatch", "squeue", "scancel", "qsub", "qstat", "qdel")


def install(bin_dir: Path, state_dir: Path) -> dict[str, str]:
    """Write the six commands into ``bin_dir`` (Python scripts run by this interpreter); the environment
    variables that put them first on PATH and keep their state in ``state_dir``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in COMMANDS:
        p = bin_dir / name
        p.write_text(
            f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(HERE)!r})\nimport _fake\n"
            f"sys.exit(_fake.main({name!r}, sys.argv[1:]))\n"
        )
        p.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "MECHCALIB_FAKE_SCHEDULER": str(state_dir)}
