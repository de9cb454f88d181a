"""What every route test's job script starts with (tests/project/test_*route*.py): the job's arguments, the
project's code folders, and a check that the interpreter has loaded none of the project yet."""

# The script's arguments: this checkout, the job's JSON file, where to write what was recorded. ``code``: the
# folders whose files count as the project's code; ``job``: the job, as the test wrote it; ``Named``: a dict
# read by attribute, as Snakemake's inputs, outputs and params are. Needs ``json``, ``os`` and ``sys`` imported.
FRESH_JOB = r"""
root, job_file, out_file = sys.argv[1:4]
code = tuple(os.path.join(root, d) + os.sep for d in ("con2", "baselines", "workflow"))
earlier = sorted(m for m in sys.modules if m.split(".")[0] in ("con2", "baselines"))
assert not earlier, f"not a fresh interpreter: {earlier}"
job = json.load(open(job_file))


class Named(dict):
    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None
"""
