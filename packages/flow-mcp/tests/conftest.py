"""Fixtures for flow-mcp's tests; the helpers live in ``flow_mcp_harness`` beside this file."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from flow_mcp_harness import fake_ollama, start_inproc, start_server, workspace

__all__ = ["fake_ollama", "start_inproc", "start_server", "workspace"]
