"""What /proc says of a proxy's process tree, for load_compare.sh.

    proc_stats.py tree PID            -> "CPU_TICKS RSS_KIB": utime+stime and resident set of PID and its descendants
    proc_stats.py threads PID         -> JSON: the scheduler's counters of every thread of the tree
                                         (/proc/<tid>/schedstat: ns running, ns runnable but waiting for a CPU)
    proc_stats.py threads PID BEFORE  -> JSON: the thread that ran most since BEFORE (the output above) was written,
                                         as {"run_ns", "wait_ns", "busy_threads"} (busy: ran over a tenth of its time)
    proc_stats.py host                -> JSON: the machine's CPU jiffies since boot, all CPUs together (/proc/stat)
    proc_stats.py host BEFORE         -> the share of them idle since BEFORE (the output above) was written
"""

import json
import os
import sys


def tree(root):
    """PID and its descendants, each with the fields of its /proc/<pid>/stat after the command name."""
    stats, children = {}, {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(name)] = fields
            children.setdefault(int(fields[1]), []).append(int(name))
    found, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            found[pid] = stats[pid]
        todo.extend(children.get(pid, []))
    return found


def tree_usage(root):
    ticks = rss_pages = 0
    for pid, fields in tree(root).items():
        try:
            with open(f"/proc/{pid}/statm") as f:
                resident = int(f.read().split()[1])
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
        rss_pages += resident
    return f"{ticks} {rss_pages * os.sysconf('SC_PAGE_SIZE') // 1024}"


def thread_counters(root):
    counters = {}
    for pid in tree(root):
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    run, wait = f.read().split()[:2]
                counters[tid] = (int(run), int(wait))
        except OSError:
            pass
    return counters


def read_json(path):
    with open(path) as f:
        return json.load(f)


def busiest_thread(root, before_path):
    before = read_json(before_path)
    deltas = [(run - before.get(tid, (0, 0))[0], wait - before.get(tid, (0, 0))[1])
              for tid, (run, wait) in thread_counters(root).items()]
    run, wait = max(deltas, default=(0, 0))
    return {"run_ns": run, "wait_ns": wait, "busy_threads": sum(1 for r, _ in deltas if run and r > run / 10)}


def host_jiffies():
    """{"total", "idle"} of the first line of /proc/stat; idle counts iowait too (nothing ran on that CPU)."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal; guest time is already inside user and nice.
    return {"total": sum(fields[:8]), "idle": fields[3] + fields[4]}


def host_idle_share(before_path):
    before = read_json(before_path)
    now = host_jiffies()
    total = now["total"] - before["total"]
    return round((now["idle"] - before["idle"]) / total, 4) if total > 0 else None


def main(argv):
    if argv[1] == "host":
        print(json.dumps(host_idle_share(argv[2]) if len(argv) > 2 else host_jiffies()))
        return
    command, root = argv[1], int(argv[2])
    if command == "tree":
        print(tree_usage(root))
    elif len(argv) > 3:
        print(json.dumps(busiest_thread(root, argv[3])))
    else:
        print(json.dumps(thread_counters(root)))


if __name__ == "__main__":
    main(sys.argv)
