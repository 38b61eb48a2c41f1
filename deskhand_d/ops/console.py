"""The console op: ``questions_watch``, how a person answers for clients that cannot ask them.

What this owns: turning a connection into a console (``deskhandctl questions`` is one) and
serving it the open questions of every client with a long poll. Only the person's clients may
become one: a console may answer every client's questions, so a client that declared an
agent's kind is refused (``not_for_agents``). Answering stays the ``answer`` op's
(:mod:`deskhand_d.ops.native`); who may answer what, and where a question goes, is
:mod:`deskhand_d.ops.questions`'.
"""

from __future__ import annotations

from deskhand_d.errors import CannotAnswerQuestions
from deskhand_d.ops.context import Handler, RequestContext, for_the_person
from deskhand_d.protocol import QuestionsWatch, ResultBody


async def questions_watch(ctx: RequestContext, req: QuestionsWatch) -> ResultBody:
    # A console may answer every client's questions: the person's, never an agent's.
    for_the_person(
        ctx,
        "watching and answering every client's questions",
        "deskhandctl questions",
        "it shows them every open question to answer",
    )
    if not ctx.can_answer_questions:
        # A console promises a person who answers; a client that said it has none would only
        # make questions wait for nobody.
        raise CannotAnswerQuestions(
            "only a client that can put questions to a person may watch them: say "
            "`can_answer_questions` in hello (`deskhandctl questions` does, on a terminal)"
        )
    return await ctx.services.questions.watch(ctx.conn_id, req.after, req.wait_s)


HANDLERS: dict[type, Handler] = {QuestionsWatch: questions_watch}
