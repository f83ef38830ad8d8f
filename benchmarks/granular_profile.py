"""Where one time step of the EEPA DEM (:mod:`mechcalib.models.granular`) spends its time, on one thread, and the
report sections of the speed figures (the profile, the speed before and after changes of the kernels).

The whole time loop runs inside numba (:func:`~mechcalib.models.granular.driver.run_one`), so the parts are
timed by calling each kernel of a step in a compiled loop on a state of a real run, not by instrumenting the
production kernel: the state and contact history after ``t_end`` of the default load program (pre-compression
and loading), then ``n`` calls of each part:

* ``check``: the rebuild test of every step (largest sphere displacement since the last build against half the
  skin);
* ``rebuild``: the linked-cell build of the Verlet list and the carry-over of the contact history, per rebuild;
* ``pairs``: the pair loop of :func:`~mechcalib.models.granular.forces.compute_forces` (forces minus walls);
* ``walls``: gravity and the three walls (``compute_forces`` on an empty pair list);
* ``motion``: the semi-implicit Euler step, rotation matrices and sphere positions.

Every figure is CPU time of the process (on a shared machine less disturbed than the wall time; one numba
thread). The sum of the parts per step (a rebuild counted at the rate the run needed it) is compared with the
whole step of the same run; the rest is the driver's bookkeeping and what the parts lose when they run together
rather than alone with their data in cache.
"""

from __future__ import annotations

import time

import numba as nb
import numpy as np

from mechcalib.models.granular import dem
from mechcalib.models.granular.fields import N_CONST, BodyState, Loads, NeighbourList, Spheres, WallContacts
from mechcalib.models.granular.forces import compute_forces
from mechcalib.models.granular.motion import _omega, _rotation, _spheres, integrate
from mechcalib.models.granular.neighbours import build_neighbours, pair_constants, transfer_history, wall_constants


@nb.njit(cache=True)
def _loop_check(n, sx, sx_build, half_skin2):
    hits = 0
    for _ in range(n):
        for s in range(sx.shape[0]):
            ex = sx[s, 0] - sx_build[s, 0]
            ey = sx[s, 1] - sx_build[s, 1]
            ez = sx[s, 2] - sx_build[s, 2]
            if ex * ex + ey * ey + ez * ez > half_skin2:
                hits += 1
                break
    return hits


@nb.njit(cache=True)
def _loop_rebuild(n, sx, srad, sb, skin, la, lb, mass, iroll, row):
    m = 0
    for _ in range(n):
        m = build_neighbours(sx, srad, sb, skin, lb.start, lb.nbr)
        transfer_history(la.start, la.nbr, la.hist, lb.start, lb.nbr, lb.hist)
        pair_constants(lb.start, lb.nbr, srad, sb, mass, iroll, row, lb.const)
    return m


@nb.njit(cache=True)
def _loop_forces(n, bodies, state, omega, spheres, nlist, walls, itab, settings, piston, dt, loads):
    ov = 0.0
    for _ in range(n):
        ov = compute_forces(bodies, state, omega, spheres, nlist, walls, itab, settings, piston, dt, loads)
    return ov


@nb.njit(cache=True)
def _loop_motion(n, state, bodies, loads, omega, R, dt, sx, srel):
    for _ in range(n):
        integrate(state, bodies, loads, omega, R, dt, 0.0)
        _rotation(state.quat, R)
        _spheres(state.pos, R, bodies.sphere_body, bodies.sphere_local, sx, srel)


@nb.njit(cache=True)
def _contacts(sx, srad, start, nbr):
    c = 0
    for i in range(start.size - 1):
        for k in range(start[i], start[i + 1]):
            j = nbr[k]
            ex, ey, ez = sx[j, 0] - sx[i, 0], sx[j, 1] - sx[i, 1], sx[j, 2] - sx[i, 2]
            rs = srad[i] + srad[j]
            if ex * ex + ey * ey + ez * ez < rs * rs:
                c += 1
    return c


def _list_arrays(ns: int, cap: int) -> tuple:
    return np.zeros(ns + 1, np.int64), np.zeros(cap, np.int64), np.zeros((cap, dem.N_HIST)), np.zeros((cap, N_CONST))


def _timed(fn, *args, reps: int = 3) -> float:
    """Best of ``reps`` calls, CPU time of the process [s] (the machine is shared: the minimum is the least
    disturbed)."""
    best = np.inf
    for _ in range(reps):
        t0 = time.process_time()
        fn(*args)
        best = min(best, time.process_time() - t0)
    return best


def profile(model, t_state: float = 0.01, n_calls: int = 200) -> dict:
    """Per-step cost of each part of a step (module docstring) for ``model``'s specimen with its default
    parameters, and the whole step of a run of the default program cut at ``t_state``."""
    from mechcalib.models.granular.triaxial import ACRYLIC, SAND, SKIN, STEEL, interaction_tables, loading_phases

    numba_threads = nb.get_num_threads()
    spec = model.specimen()
    parts = spec.particles
    theta = model.full_vector()
    tab = interaction_tables(theta[None])[0]
    c = model.default_conditions
    dt = dem.time_step(model.spec.radius * 1e-3, SAND, [ACRYLIC, STEEL], float(theta[0]), safety=float(c["dt_safety"]))
    r_cyl = model.spec.diameter * 5e-4
    ph = loading_phases(c, spec.piston_z, t_state, round(t_state * float(c["fs"])) + 1)
    # the whole step: a run to t_state (compiled by a first short call)
    skin = SKIN * model.spec.radius * 1e-3
    dem.run(parts, spec.pos, spec.quat, tab, dt, dem.Phases(t_end=5 * dt, n_samples=2), r_cyl=r_cyl, skin=skin)
    t0, c0 = time.perf_counter(), time.process_time()
    res = dem.run(parts, spec.pos, spec.quat, tab, dt, ph, r_cyl=r_cyl, skin=skin)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    steps = int(res.info[0, dem.F_STEPS])
    rebuilds = int(res.info[0, dem.F_REBUILDS])
    ns = parts.n_spheres
    # the parts, on the final state of that run
    pos, quat = res.pos[0].copy(), res.quat[0].copy()
    vel, angmom = res.vel[0].copy(), res.angmom[0].copy()
    state = BodyState(pos, quat, vel, angmom)
    bodies = dem.Bodies(parts.mass, parts.inertia, parts.sphere_body, parts.sphere_local, parts.sphere_radius)
    nb_ = parts.n_bodies
    R = np.empty((nb_, 9))
    omega = np.zeros((nb_, 3))
    sx, srel = np.empty((ns, 3)), np.empty((ns, 3))
    _rotation(quat, R)
    _omega(R, parts.inertia, angmom, omega)
    _spheres(pos, R, parts.sphere_body, parts.sphere_local, sx, srel)
    cap = 16 * ns
    la = NeighbourList(*_list_arrays(ns, cap))
    lb = NeighbourList(*_list_arrays(ns, cap))
    npairs = build_neighbours(sx, parts.sphere_radius, parts.sphere_body, skin, la.start, la.nbr)
    ncont = _contacts(sx, parts.sphere_radius, la.start, la.nbr)
    empty = NeighbourList(np.zeros(ns + 1, np.int64), la.nbr, la.hist, la.const)
    iroll = np.empty(nb_)
    rb = np.zeros(nb_)
    np.maximum.at(rb, parts.sphere_body, parts.sphere_radius)
    iroll[:] = (parts.inertia[:, 0] + parts.inertia[:, 1] + parts.inertia[:, 2]) / 3.0 + parts.mass * rb * rb
    wall_types = np.array([1, 1, 2], np.int64)
    settings = dem.Settings(wall_types, r_cyl, 0.0, -9.81, skin, 16.0, ph.array())
    loads = Loads(np.zeros((nb_, 3)), np.zeros((nb_, 3)), np.zeros((3, 3)))
    walls = WallContacts(np.zeros((3 * ns, dem.N_HIST)), np.zeros(3 * ns, np.int8), np.zeros((3 * ns, N_CONST)))
    pair_constants(la.start, la.nbr, parts.sphere_radius, parts.sphere_body, parts.mass, iroll, tab[0], la.const)
    wall_constants(parts.sphere_radius, parts.sphere_body, parts.mass, iroll, tab, wall_types, walls.const)
    # the piston where the run left it
    piston = (float(res.info[0, dem.F_Z_REF]) - ph.v_load * min(t_state, ph.t_load), 0.0, True)
    spheres = Spheres(sx, srel)
    sx_build = sx.copy()
    fargs = (bodies, state, omega, spheres, la, walls, tab, settings, piston, dt, loads)
    # compile, then warm the history so that the timed calls see loaded contacts
    _loop_check(1, sx, sx_build, (0.5 * skin) ** 2)
    rargs = (sx, parts.sphere_radius, parts.sphere_body, skin, la, lb, parts.mass, iroll, tab[0])
    _loop_rebuild(1, *rargs)
    _loop_forces(20, *fargs)
    st2 = BodyState(pos.copy(), quat.copy(), vel.copy(), angmom.copy())
    margs = (
        st2,
        bodies,
        loads,
        omega.copy(),
        R.copy(),
        dt,
        sx.copy(),
        srel.copy(),
    )
    _loop_motion(1, *margs)
    t_check = _timed(_loop_check, n_calls, sx, sx_build, (0.5 * skin) ** 2) / n_calls
    nreb = max(2, n_calls // 20)
    t_rebuild = _timed(_loop_rebuild, nreb, *rargs) / nreb
    t_forces = _timed(_loop_forces, n_calls, *fargs) / n_calls
    t_walls = _timed(_loop_forces, n_calls, *(fargs[:4] + (empty,) + fargs[5:])) / n_calls
    t_motion = _timed(_loop_motion, n_calls, *margs) / n_calls
    per_step = cpu / steps
    parts_s = {
        "check": t_check,
        "rebuild": t_rebuild * rebuilds / steps,
        "pairs": t_forces - t_walls,
        "walls": t_walls,
        "motion": t_motion,
    }
    parts_s["driver (rest)"] = per_step - sum(parts_s.values())
    return {
        "numba_threads": numba_threads,
        "specimen": model.spec.name,
        "n_spheres": ns,
        "t_state_s": t_state,
        "steps": steps,
        "rebuilds": rebuilds,
        "steps_per_rebuild": steps / max(rebuilds, 1),
        "seconds_run": wall,
        "cpu_seconds_run": cpu,
        "sphere_steps_per_s": steps * ns / wall,
        "sphere_steps_per_cpu_s": steps * ns / cpu,
        "skin_radii": SKIN,
        "pairs_per_sphere": npairs / ns,
        "contacts_per_sphere": ncont / ns,
        "rebuild_call_s": t_rebuild,
        "per_step_s": per_step,
        "parts_per_step_s": parts_s,
        "pair_ns": 1e9 * (t_forces - t_walls) / max(npairs, 1),
    }


# ----------------------------------------------------------------------------------------------------------
# report sections (benchmarks/granular.py writes them into results/granular.md)
def fmt(v: float, nd: int = 1) -> str:
    return f"{v:,.{nd}f}"


def speed_history(res: dict) -> list[str]:
    """Before and after: the stored earlier speed figures beside the present ones."""
    rows = list(res.get("speed_history", []))
    for st in ("fast", "paper"):
        cur = res.get(st)
        if cur and rows:
            rows.append(
                {
                    "stage": st,
                    "commit": cur.get("commit", "?"),
                    "steps": cur["default"]["steps"] if st == "fast" else cur["steps"],
                    "n_spheres": cur["n_spheres"],
                    "seconds": cur["seconds_1thread"] if st == "fast" else cur["seconds"],
                    "cpu_seconds": cur.get("cpu_seconds_1thread" if st == "fast" else "cpu_seconds"),
                    "sphere_steps_per_s_1core": cur["sphere_steps_per_s_1core"],
                    "load": cur["load"][-1],
                }
            )
    if not rows:
        return []
    L = [
        "### One thread, before and after changes of the kernels",
        "",
        (
            "Each row is one default simulation on one thread as the `fast` and `paper` stages record it, oldest "
            "first (a redone stage keeps its previous figures here). The CPU time of the process is less disturbed "
            "by the other jobs on the machine than the wall time; the load is the 1-minute load average at the end."
        ),
        "",
        "| stage | commit | spheres | steps | wall [s] | CPU [s] | sphere-steps/s (wall) | sphere-steps/s (CPU) | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        work = r["steps"] * r["n_spheres"]
        cpu = r.get("cpu_seconds")
        L.append(
            f"| `{r['stage']}` | {r['commit']} | {r['n_spheres']} | {r['steps']:,} | {fmt(r['seconds'])} | "
            f"{fmt(cpu) if cpu else 'not recorded'} | {r['sphere_steps_per_s_1core']:.3g} | "
            f"{f'{work / cpu:.3g}' if cpu else ''} | {r['load']} |"
        )
    return [*L, ""]


PROFILE_PARTS = {
    "check": "rebuild test (largest displacement since the last build)",
    "rebuild": "neighbour-list rebuilds (linked cells, history carried over, pair constants)",
    "pairs": "pair contacts (EEPA normal, tangential, rolling)",
    "walls": "gravity and the three walls",
    "motion": "semi-implicit Euler step, rotations, sphere positions",
    "driver (rest)": "the driver's bookkeeping (the rest of the step)",
}


def profile_section(p: dict | None) -> list[str]:
    if not p:
        return []
    per = p["per_step_s"]
    L = [
        f"## Profile of one time step (`{p['specimen']}` specimen, one thread, `granular_profile.py`)",
        "",
        (
            f"A run of the default program cut at {1e3 * p['t_state_s']:.0f} ms (pre-compression and the start of the "
            f"loading): {p['steps']:,} steps of {p['n_spheres']} spheres in {fmt(p['seconds_run'])} s wall, "
            f"{fmt(p['cpu_seconds_run'])} s CPU ({p['sphere_steps_per_s']:.3g} sphere-steps per second of wall time, "
            f"{p['sphere_steps_per_cpu_s']:.3g} per CPU second), {1e6 * per:.0f} us CPU per step (load "
            f"{p['load'][0]} -> {p['load'][1]}, commit {p['commit']}). Each part is then timed alone on the final "
            "state of that run (CPU time, best of three, 200 calls each); a rebuild counts at the rate the run "
            "needed it. The rest is the driver's bookkeeping and what the parts lose by running together rather "
            "than alone with their data in cache."
        ),
        "",
        "| part | us CPU per step | share |",
        "|---|---|---|",
    ]
    for k, v in p["parts_per_step_s"].items():
        L.append(f"| {PROFILE_PARTS.get(k, k)} | {1e6 * v:.1f} | {100 * v / per:.1f} % |")
    L += [
        "",
        (
            f"Neighbour list: Verlet skin {p.get('skin_radii', 0.2):g} r, rebuilt when a sphere has moved more than "
            "half the skin (the results do not depend on the skin, `tests/test_granular_dem.py`): "
            f"{p['rebuilds']} rebuild(s) in {p['steps']:,} steps ({p['steps_per_rebuild']:,.0f} steps per rebuild), "
            f"{1e3 * p['rebuild_call_s']:.2f} ms each, so the rebuild policy costs nothing worth tuning. The list holds "
            f"{p['pairs_per_sphere']:.2f} pairs per sphere, of which {p['contacts_per_sphere']:.2f} touch; "
            f"{p['pair_ns']:.0f} ns per listed pair, {p['pair_ns'] * p['pairs_per_sphere'] / p['contacts_per_sphere']:.0f} "
            "ns per touching pair."
        ),
        "",
    ]
    return L
