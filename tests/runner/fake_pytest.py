"""A stand-in for ``python -m pytest`` with the zlbench plugins, for worker tests.

Invoked as ``fake_pytest.py -m pytest ... --zl-plan PLAN ...``. For each plan
entry it prints the BEGIN/END lines and behaves as the entry's ``op`` says:
  ok / fail / skip  : END with PASS / FAIL / SKIP and a result.json
  segv              : SIGSEGV itself mid-op
  exit3             : os._exit(3) mid-op
  exit0             : os._exit(0) mid-op (no END)
  hang              : sleep forever mid-op
  detach            : start a grandchild in its own session (setsid) that holds
                      stdout and sleeps; its pid in <run_dir>/detached.pid; hang
  fault             : print a CUDA device fault, END FAIL
  noend             : never prints BEGIN (and finishes normally)
  color             : prints ANSI-coloured text, END PASS
  confbad           : (any entry) the whole process fails as pytest does when a
                      conftest cannot be imported: exit 4 before any op began
It also writes the environment variables the worker sets into env.json in
each run dir.
"""

import json
import os
import signal
import sys
import time

RESULT = {
    "schema_version": 1,
    "kind": "run",
    "repo": "main",
    "mode": "record",
    "timing": "kernel",
    "rows": [{"op": "x", "dtype": "float32", "shape": "[1]", "latency_ms": 1.0}],
}


def result(entry, status):
    data = dict(RESULT, run_name=entry["run_name"], op=entry["op"], status=status)
    path = os.path.join(entry["run_dir"], "result.json")
    with open(path + ".tmp", "w") as f:
        json.dump(data, f)
    os.replace(path + ".tmp", path)


def main():
    argv = sys.argv[1:]
    plan = json.load(open(argv[argv.index("--zl-plan") + 1]))
    print("\x1b[1m===== test session starts =====\x1b[0m", flush=True)
    print("argv " + " ".join(argv), flush=True)
    if any(e["op"].split("@")[0] == "confbad" for e in plan["entries"]):
        conftest = os.path.join(os.getcwd(), "benchmark", "conftest.py")
        print(f"ImportError while loading conftest '{conftest}'.", flush=True)
        print("benchmark/conftest.py:5: in <module>", flush=True)
        print("E   DeprecationWarning: old api", flush=True)
        sys.exit(4)
    for entry in plan["entries"]:
        op = entry["op"].split("@")[0]
        keys = ("TRITON_CACHE_DIR", "FLAGGEMS_CACHE_DIR", "FLAGGEMS_DB_URL", "PYTHONHASHSEED")
        keys += ("PYTHONPATH", "PYTHONUNBUFFERED")
        with open(os.path.join(entry["run_dir"], "env.json"), "w") as f:
            json.dump({k: os.environ.get(k) for k in keys} | {"pid": os.getpid()}, f)
        if op == "noend":
            continue
        name = entry["run_name"]
        print(f"benchmark/test_x.py ZLBENCH_OP_BEGIN run_name={name}", flush=True)
        print(f"measuring {name}", flush=True)
        if op == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        if op == "exit3":
            os._exit(3)
        if op == "exit0":
            os._exit(0)
        if op == "detach":
            import subprocess

            sleeper = "import time; time.sleep(3600)"
            kid = subprocess.Popen([sys.executable, "-c", sleeper], start_new_session=True)
            with open(os.path.join(entry["run_dir"], "detached.pid"), "w") as f:
                f.write(str(kid.pid))
            time.sleep(3600)
        if op == "hang":
            time.sleep(3600)
        if op == "fault":
            print("RuntimeError: CUDA error: an illegal memory access was encountered", flush=True)
        if op == "color":
            print("\x1b[31mred text\x1b[0m plain", flush=True)
        status = {"fail": "FAIL", "fault": "FAIL", "skip": "SKIP"}.get(op, "PASS")
        result(entry, status)
        print(f"ZLBENCH_OP_END run_name={name} status={status}", flush=True)
    print("===== 1 passed =====", flush=True)


if __name__ == "__main__":
    main()
