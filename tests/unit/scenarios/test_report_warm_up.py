"""The report's warm-up imports matplotlib in a thread while a run over Ray waits; a figure drawn meanwhile waits."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

# A fresh interpreter (matplotlib not imported yet): the warm-up starts, and the main thread draws at once,
# while the thread is still importing (0.3 s); the figure is drawn whole, on the Agg backend.
_DRAW_WHILE_WARMING = textwrap.dedent("""
    import json, sys
    from parley.scenarios import report_html
    before = "matplotlib" in sys.modules
    thread = report_html.warm_up()
    png = report_html.bars_figure({"metrics": {"leakage": 71.5, "leakage_bound": 88.0, "epsilon_spent": 1.0},
                                   "spec": {"budget": {"epsilon": 2.0}}})
    thread.join()
    import matplotlib
    print(json.dumps({"before": before, "png": png[:22], "backend": matplotlib.get_backend().lower(),
                      "thread": thread.name}))
""")


def test_a_figure_drawn_while_the_warm_up_imports_matplotlib_waits_for_it():
    for _ in range(3):  # each in a fresh interpreter
        done = subprocess.run([sys.executable, "-c", _DRAW_WHILE_WARMING], capture_output=True, text=True,
                              check=False, timeout=120)
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout.strip().splitlines()[-1])
        assert seen == {"before": False, "png": "data:image/png;base64,", "backend": "agg",
                        "thread": "parley-report-warm-up"}
