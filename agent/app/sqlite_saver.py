"""LangGraph's SQLite checkpoint saver with the ``prune`` its package leaves unimplemented.

``BaseCheckpointSaver.prune(thread_ids, strategy="keep_latest")`` is LangGraph's contract for dropping the
checkpoints a thread no longer needs; ``PostgresSaver`` implements it, ``SqliteSaver`` (langgraph-checkpoint-sqlite
3.x) raises ``NotImplementedError``. medhx keeps a session's transcript in a table of its own
(:mod:`agent.app.transcript`), so a session needs only its latest checkpoint, on either store; this is the same
contract on SQLite, in the saver's own transaction and under its own lock, on its two tables.
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.checkpoint.sqlite import SqliteSaver as _LangGraphSqliteSaver


class SqliteSaver(_LangGraphSqliteSaver):
    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``"keep_latest"``: keep each namespace's latest checkpoint (the one ``get_tuple`` loads) with its pending
        writes, and delete every older checkpoint and its writes, in one transaction; the kept checkpoint is left
        with no parent. Newer checkpoints than the ones read (a run saving meanwhile) are never deleted.
        ``"delete"``: every checkpoint and write of the threads.

        Unlike ``PostgresSaver.prune`` this knows nothing of subgraph calls or ``DeltaChannel`` (each namespace is
        pruned on its own, and a ``DeltaChannel`` would lose its history): the interview graph uses neither."""
        if isinstance(thread_ids, str):
            raise TypeError("thread_ids must be a sequence of thread IDs, not a str")
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"Unknown prune strategy: {strategy!r}")
        with self.cursor() as cur:  # one transaction: the saver's lock held, committed when the block ends
            for thread_id in map(str, thread_ids):
                if strategy == "delete":
                    cur.execute("DELETE FROM checkpoints WHERE thread_id = ?", (thread_id,))
                    cur.execute("DELETE FROM writes WHERE thread_id = ?", (thread_id,))
                    continue
                heads = cur.execute("SELECT checkpoint_ns, max(checkpoint_id) FROM checkpoints WHERE thread_id = ? "
                                    "GROUP BY checkpoint_ns", (thread_id,)).fetchall()
                for ns, head in heads:
                    key = (thread_id, ns, head)
                    where = "thread_id = ? AND checkpoint_ns = ? AND checkpoint_id"
                    cur.execute(f"DELETE FROM checkpoints WHERE {where} < ?", key)
                    cur.execute(f"DELETE FROM writes WHERE {where} < ?", key)
                    cur.execute(f"UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE {where} = ?", key)
