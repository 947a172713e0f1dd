"""The names evgate and the plugin share, read from ``evidence_gate_protocol.json`` beside this
module (evgate's build generates its C++ names from the same file): the plugin's options, the
record events and the members each may have, the fork server's requests and answers.

``OPTION.channel`` is ``"--evidence-gate-channel"``, ``EVENT.start`` is ``"start"``, ``OP.run`` is
``"run"``. A name not in the file is an AttributeError here and a compile error in evgate.
"""

import json
import os
from types import SimpleNamespace

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "evidence_gate_protocol.json"),
          encoding="utf-8") as _file:
    PROTOCOL = json.load(_file)

OPTION_PREFIX = PROTOCOL["option_prefix"]
OPTION = SimpleNamespace(**PROTOCOL["options"])
# The records the plugin sends, and those evgate writes beside them: event -> its members.
PLUGIN_RECORDS = PROTOCOL["records"]["plugin"]
EVGATE_RECORDS = PROTOCOL["records"]["evgate"]
EVENT = SimpleNamespace(**{event: event for event in {**PLUGIN_RECORDS, **EVGATE_RECORDS}})
# The fork server's requests (op -> its members) and the members of its answers.
REQUESTS = PROTOCOL["fork"]["requests"]
ANSWERS = PROTOCOL["fork"]["answers"]
OP = SimpleNamespace(**{op: op for op in REQUESTS})


def dest(flag):
    """The attribute of ``config.option`` an option lands on: ``evidence_gate_verified_ns``."""
    return flag.lstrip("-").replace("-", "_")
