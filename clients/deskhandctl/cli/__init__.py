"""The command line: the grammar table, reading a command line, running a command, output.

What this owns: ``grammar`` (every command, its arguments and its handler), ``parser`` (the fast
reader) and ``usage`` (argparse, for help and usage errors), ``commands`` (the handlers of the
commands that are one request), one module per command that is more than that (``console``,
``emergency``, ``offline``, ``demo``, ``auditcmd``, ``tracecmd``), and what a person reads and
answers (``render``, ``deskview``, ``events``, ``person``).
"""

from __future__ import annotations
