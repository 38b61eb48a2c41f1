"""Reviewing Jev after the fact, outside the daemon's request path (``deskhandctl trace``,
``deskhandctl eval``): reading what a Jev run left behind, and trying Jev on the seed cases.

What this owns: :mod:`.traceview` (a trace file into events, whether it is whole, and where a run
first diverged), :mod:`.tracetimeline` (the per-step timeline of ``deskhandctl trace show``),
both pure; and :mod:`.evaluation` (``deskhandctl eval --live``: the seed cases through candidate
selection and the real Jev API). They read the Jev loop's values (:mod:`deskhand_d.jev`) and the
trees (:mod:`deskhand_d.ax`); nothing in the daemon imports them.
"""
