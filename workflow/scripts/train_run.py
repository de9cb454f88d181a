"""Snakemake script of rule train: run ``con2 train`` for one run of the grid.

The command is printed to the log so it can be rerun by hand. Where data live, the device and the
thread count come from the profile at run time (``--config data_dir=... device=... threads=...``)
and are not rerun triggers: they change neither results nor the run's config hash.

A checkpoint left by a run of another configuration (the profile changed, so Snakemake reruns
the job) is removed first: otherwise ``con2 train`` would refuse to resume from it. A checkpoint
of the same configuration is kept, so a killed run resumes where it stopped.
"""

import json
import shlex
import signal
import subprocess
import sys
from pathlib import Path

snakemake = globals()["snakemake"]  # injected by Snakemake's script directive
sys.path.insert(0, str(snakemake.scriptdir))
from _log import logged  # noqa: E402


def stale_checkpoint(run_dir: Path, overrides: list[str]) -> bool:
    """True if run_dir holds a checkpoint written under a different configuration."""
    from con2.config import load_config
    from con2.errors import ConfigError

    ckpt, old_cfg = run_dir / "checkpoint.pt", run_dir / "config.yaml"
    if not ckpt.is_file():
        return False
    if not old_cfg.is_file():
        return True
    try:
        return load_config(old_cfg).config_hash() != load_config(None, overrides).config_hash()
    except ConfigError:
        return True


def main() -> int:
    run_dir = Path(snakemake.output.record).parent
    overrides = list(snakemake.params.overrides)
    cfg = snakemake.config
    runtime = [f"data_dir={json.dumps(str(cfg.get('data_dir', 'data')))}", f"device={json.dumps(str(cfg.get('device', 'auto')))}",
               f"threads={snakemake.threads}"]
    if stale_checkpoint(run_dir, overrides):
        print(f"removing {run_dir / 'checkpoint.pt'}: written under another configuration")
        (run_dir / "checkpoint.pt").unlink()
    cmd = ["con2", "train", "--set", *overrides, *runtime, "--run-dir", str(run_dir)]
    print("$ " + shlex.join(cmd), flush=True)
    proc = subprocess.Popen([sys.executable, "-m", "con2", *cmd[1:]], stdout=sys.stdout, stderr=sys.stderr)

    def forward(signum: int, _frame: object) -> None:  # stop the trainer with us; its checkpoint stays
        proc.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)
    rc = proc.wait()
    if rc == 0 and not Path(snakemake.output.record).is_file():
        print(f"con2 train exited 0 but wrote no {snakemake.output.record}")
        rc = 1
    return rc


with logged(snakemake):
    code = main()
if code:
    raise SystemExit(f"con2 train failed with exit status {code}; see {snakemake.log[0]}")
