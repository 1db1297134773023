"""benchmarks/pod_columns.py times reading pods as the loader's rows against building Pods (what
the rows hold is tests/model/test_pod_rows.py's): it reads every pod of a dump both ways."""

from benchmarks import dumps, pod_columns


def test_the_benchmark_reads_every_pod_of_a_dump_both_ways(tmp_path):
    path = dumps.filter_out_schedulable(tmp_path, "json", nodes=3, scheduled=5, pending=7)
    figures = pod_columns.measure(str(path))
    assert figures["pods_count"] == 12 and figures["pods_for_the_reader"] == 0
    assert set(figures) == {"split", "decode", "pods", "columns", "pods_count", "pods_for_the_reader"}
