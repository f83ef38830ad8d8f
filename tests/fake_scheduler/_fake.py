"""Stand-in batch scheduler for tests: sbatch/qsub start the job script as a local process (its own session),
squeue/qstat report the jobs alive, scancel/qdel kill them; a job past its walltime is killed (state TIMEOUT).

State lives in the folder named by ``MECHCALIB_FAKE_SCHEDULER`` (one file per job: ``ID.json``)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path


def _state() -> Path:
    d = Path(os.environ["MECHCALIB_FAKE_SCHEDULER"])
    d.mkdir(parents=True, exist_ok=True)
    return d


def _walltime(script: str) -> float | None:
    m = re.search(r"^#(?:SBATCH -t|PBS -l walltime=)\s*(\S+)", script, re.M)
    if not m:
        return None
    days, _, rest = m.group(1).rpartition("-")
    h, mi, s = (int(p) for p in rest.split(":"))
    return (int(days) if days else 0) * 86400 + h * 3600 + mi * 60 + s


def _new_id(d: Path) -> int:
    """The next job id, under a lock: dask-jobqueue submits a cluster's jobs at once, and two sbatch calls that
    read the counter together would share an id (one job hidden behind the other)."""
    counter = d / "counter"
    with open(d / "counter.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        n = int(counter.read_text()) + 1 if counter.exists() else 1000
        counter.write_text(str(n))
    return n


def submit(kind: str, script_path: str) -> None:
    d = _state()
    job = _new_id(d)
    script = Path(script_path).read_text()
    keep = d / f"{job}.sh"
    keep.write_text(script)
    wall = _walltime(script)
    log = open(d / f"{job}.log", "w")  # noqa: SIM115
    p = subprocess.Popen(
        [sys.executable, __file__, "_watch", str(job), str(keep), str(wall or 0)],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    (d / f"{job}.json").write_text(json.dumps({"pid": p.pid, "state": "RUNNING", "walltime": wall}))
    print(f"Submitted batch job {job}" if kind == "slurm" else f"{job}.fakepbs")


def _set(job: str, state: str) -> None:
    f = _state() / f"{job}.json"
    info = json.loads(f.read_text())
    info["state"] = state
    f.write_text(json.dumps(info))


def watch(job: str, script: str, wall: float) -> None:
    """The job: the script as a child in this session; killed at its walltime."""
    p = subprocess.Popen(["bash", script])
    try:
        p.wait(timeout=wall or None)
        _set(job, "COMPLETED")
    except subprocess.TimeoutExpired:
        _set(job, "TIMEOUT")
        os.killpg(os.getpgid(0), signal.SIGKILL)


def alive(job: str) -> bool:
    f = _state() / f"{job}.json"
    if not f.exists():
        return False
    info = json.loads(f.read_text())
    if info["state"] != "RUNNING":
        return False
    try:
        os.killpg(info["pid"], 0)
    except ProcessLookupError:
        return False
    return True


def cancel(jobs: list[str]) -> None:
    for job in jobs:
        job = job.split(".")[0]
        f = _state() / f"{job}.json"
        if not f.exists():
            continue
        info = json.loads(f.read_text())
        if info["state"] != "RUNNING":  # ended (at its walltime...): as SLURM, nothing to cancel
            continue
        with contextlib.suppress(ProcessLookupError):
            os.killpg(info["pid"], signal.SIGKILL)
        info["state"] = "CANCELLED"
        f.write_text(json.dumps(info))


def status(args: list[str]) -> int:
    ids = [a.split(".")[0] for a in args if a[:1].isdigit()]
    if "-j" in args:
        ids = [i.split(".")[0] for i in args[args.index("-j") + 1].split(",")]
    if not ids:
        ids = [f.stem for f in _state().glob("*.json")]
    live = [i for i in ids if alive(i)]
    for i in live:
        print(f"{i} RUNNING")
    return 0 if live or not ids else 1


def main(name: str, args: list[str]) -> int:
    if name == "_watch":
        watch(args[0], args[1], float(args[2]))
    elif name in ("sbatch", "qsub"):
        submit("slurm" if name == "sbatch" else "pbs", args[-1])
    elif name in ("scancel", "qdel"):
        cancel(args)
    elif name in ("squeue", "qstat"):
        return status(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
