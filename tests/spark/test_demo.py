"""The README's main job runs end to end."""
from __future__ import annotations

from jobs import stream_demo


def test_stream_demo_produces_consumes_and_drains_its_backlog(tmp_path, capsys):
    summary = stream_demo.run(500, str(tmp_path))
    assert summary == {"produced": 500, "consumed": 500, "backlog": 0, "first_read": [0, 1, 2]}
    out = capsys.readouterr().out
    assert "send results {'Ok': 500}" in out and "backlog of demo-subscription=0" in out
