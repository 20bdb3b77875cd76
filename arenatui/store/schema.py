"""The database schema as an ordered list of migrations; `PRAGMA user_version` records how far a file is."""

from __future__ import annotations

RESULT_COLUMNS: tuple[str, ...] = (
    "run_id", "model_key", "case_id", "trial", "status", "output", "score", "passed", "error_class",
    "error_message", "attempts", "latency_ms", "total_ms", "ttft_ms", "input_tokens", "output_tokens", "cost",
    "finish_reason", "tokens_estimated", "started_at", "finished_at", "connect_ms", "failure_mode", "score_detail",
    "http_status", "repairs", "escalated_to", "first_passed", "reasoning_tokens", "answer_ttft_ms", "reasoning",
    "reasoning_estimated", "variant",
)
"""CallResult's fields after run_id, then whether the reasoning's tokens are estimated (CallResult.reasoning holds
both: store.db.result_row spreads it) and the variant (the engine's lane key holds it: result_row splits it)."""

MIGRATIONS: tuple[str, ...] = (
    # 1: runs, results, concurrency changes
    """
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        project TEXT NOT NULL,
        project_path TEXT,
        config_json TEXT NOT NULL,
        filters_json TEXT NOT NULL,
        planned INTEGER NOT NULL,
        started_at REAL NOT NULL,
        finished_at REAL,
        status TEXT NOT NULL,
        message TEXT,
        arenatui_version TEXT
    );
    CREATE TABLE results (
        run_id TEXT NOT NULL,
        model_key TEXT NOT NULL,
        case_id TEXT NOT NULL,
        trial INTEGER NOT NULL,
        status TEXT NOT NULL,
        output TEXT,
        score REAL,
        passed INTEGER NOT NULL,
        error_class TEXT,
        error_message TEXT,
        attempts INTEGER NOT NULL,
        latency_ms REAL,
        total_ms REAL NOT NULL,
        ttft_ms REAL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cost REAL NOT NULL,
        finish_reason TEXT,
        tokens_estimated INTEGER NOT NULL DEFAULT 0,
        started_at REAL NOT NULL,
        finished_at REAL NOT NULL,
        PRIMARY KEY (run_id, model_key, case_id, trial)
    );
    CREATE TABLE concurrency_changes (
        run_id TEXT NOT NULL,
        at REAL NOT NULL,
        old INTEGER NOT NULL,
        new INTEGER NOT NULL,
        model_key TEXT,
        source TEXT NOT NULL
    );
    CREATE INDEX concurrency_changes_run ON concurrency_changes (run_id, at);
    """,
    # 2: the client's own CPU load about once a second (fraction of one core), to tell when arenatui itself
    # was the bottleneck
    """
    CREATE TABLE client_load (
        run_id TEXT NOT NULL,
        at REAL NOT NULL,
        cpu REAL NOT NULL,
        interval_s REAL NOT NULL
    );
    CREATE INDEX client_load_run ON client_load (run_id, at);
    """,
    # 3: which process runs a run, so a run whose process died (SIGKILL, power loss) shows as interrupted
    """
    ALTER TABLE runs ADD COLUMN pid INTEGER;
    ALTER TABLE runs ADD COLUMN host TEXT;
    """,
    # 4: how long each call's request took to get onto the wire (connecting, TLS, the client's own queueing),
    # which latency_ms leaves out
    """
    ALTER TABLE results ADD COLUMN connect_ms REAL;
    """,
    # 5: case sets stored once per content digest; a heartbeat for the run's holder
    # A 100,000-case project stored 7 MB per run inline; the heartbeat tells a live holder on another host.
    """
    CREATE TABLE case_sets (
        digest TEXT PRIMARY KEY,
        cases_json TEXT NOT NULL
    );
    ALTER TABLE runs ADD COLUMN case_set TEXT REFERENCES case_sets (digest);
    ALTER TABLE runs ADD COLUMN heartbeat_at REAL;
    """,
    # 6: what each wrong answer looked like (arenatui.scoring.failure_modes) and the scorer's own word on it (the
    # JSON path that failed, the code's verdict). Old rows get every mode SQL can tell; refusal, invalid_format and
    # wrong_language need the scorer and stay wrong_answer.
    """
    ALTER TABLE results ADD COLUMN failure_mode TEXT;
    ALTER TABLE results ADD COLUMN score_detail TEXT;
    UPDATE results SET failure_mode = CASE
        WHEN error_class IS NOT NULL THEN error_class
        WHEN passed = 1 THEN 'none'
        WHEN output IS NULL OR trim(output) = '' THEN 'empty'
        WHEN finish_reason IN ('length', 'max_tokens', 'model_length') THEN 'truncated'
        ELSE 'wrong_answer' END;
    """,
    # 7: open-loop load runs: a run kind, one row per request, and the segments (one per offered rate)
    """
    ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'sweep';
    CREATE TABLE load_requests (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        segment INTEGER NOT NULL,
        shard INTEGER NOT NULL DEFAULT 0,
        case_id TEXT NOT NULL,
        warmup INTEGER NOT NULL DEFAULT 0,
        scheduled_s REAL NOT NULL,
        sent_s REAL NOT NULL,
        finished_s REAL NOT NULL,
        outcome TEXT NOT NULL,
        ttft_ms REAL,
        latency_ms REAL,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        error_message TEXT,
        PRIMARY KEY (run_id, seq)
    );
    CREATE TABLE load_segments (
        run_id TEXT NOT NULL,
        segment INTEGER NOT NULL,
        rate REAL NOT NULL,
        start_s REAL NOT NULL,
        end_s REAL NOT NULL,
        warmup_s REAL NOT NULL DEFAULT 0,
        source TEXT NOT NULL,
        PRIMARY KEY (run_id, segment)
    );
    """,
    # 8: every failed attempt (why a call that passed on its 6th attempt needed six), and each model's
    # per-level readout (what every concurrency level gave) and the tuner's decisions with their reasons kept
    # with the run, and `arena sweep`'s runs grouped by level
    """
    CREATE TABLE failed_attempts (
        run_id TEXT NOT NULL,
        model_key TEXT NOT NULL,
        case_id TEXT NOT NULL,
        trial INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        error_class TEXT NOT NULL,
        http_status INTEGER,
        retry_after_s REAL,
        delay_s REAL,
        at REAL NOT NULL,
        message TEXT
    );
    CREATE INDEX failed_attempts_call ON failed_attempts (run_id, model_key, case_id, trial);
    CREATE TABLE tuning_levels (
        run_id TEXT NOT NULL,
        model_key TEXT NOT NULL,
        level INTEGER NOT NULL,
        seconds REAL NOT NULL,
        answered INTEGER NOT NULL,
        goodput REAL NOT NULL,
        limited_share REAL NOT NULL,
        transient_share REAL NOT NULL,
        retries_per_s REAL NOT NULL,
        given_up INTEGER NOT NULL,
        p50_ms REAL,
        p95_ms REAL,
        enough INTEGER NOT NULL,
        best INTEGER NOT NULL DEFAULT 0,
        verdict TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (run_id, model_key, level)
    );
    CREATE TABLE tuning_decisions (
        run_id TEXT NOT NULL,
        at REAL NOT NULL,
        model_key TEXT,
        old INTEGER NOT NULL,
        new INTEGER NOT NULL,
        reason TEXT NOT NULL
    );
    CREATE INDEX tuning_decisions_run ON tuning_decisions (run_id, at);
    CREATE TABLE level_sweeps (
        sweep_id TEXT NOT NULL,
        level INTEGER NOT NULL,
        run_id TEXT NOT NULL,
        wall_s REAL NOT NULL,
        answered INTEGER NOT NULL,
        errored INTEGER NOT NULL,
        goodput REAL NOT NULL,
        limited_share REAL NOT NULL,
        p95_ms REAL,
        knee INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (sweep_id, level)
    );
    """,
    # 9: the HTTP status of the attempt that ended an errored call (its failed-attempt row kept None before)
    """
    ALTER TABLE results ADD COLUMN http_status INTEGER;
    """,
    # 10: llm_judge verdicts: one judge call per judged candidate call (the latest, when --retry-errored judged it
    # again), with the judge's own answer, attempts, tokens and spend, kept apart from the candidate's
    """
    CREATE TABLE judgments (
        run_id TEXT NOT NULL,
        model_key TEXT NOT NULL,
        case_id TEXT NOT NULL,
        trial INTEGER NOT NULL,
        judge_key TEXT NOT NULL,
        status TEXT NOT NULL,
        score REAL,
        passed INTEGER NOT NULL,
        error_class TEXT,
        error_message TEXT,
        output TEXT,
        attempts INTEGER NOT NULL,
        latency_ms REAL,
        total_ms REAL NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cost REAL NOT NULL,
        started_at REAL NOT NULL,
        finished_at REAL NOT NULL,
        score_detail TEXT,
        PRIMARY KEY (run_id, model_key, case_id, trial)
    );
    """,
    # 11: the shards of a run made on several machines (`--shard K/N`): one row per shard, written by the shard
    # itself and carried over by `arena merge`, with its start barrier's figures (a load shard's lateness at the
    # planned instant and its clock's offset estimate)
    """
    CREATE TABLE run_shards (
        run_id TEXT NOT NULL,
        shard INTEGER NOT NULL,
        shards INTEGER NOT NULL,
        host TEXT,
        status TEXT,
        planned_start REAL,
        start_lag_s REAL,
        clock_offset_s REAL,
        clock_error_s REAL,
        clock_source TEXT,
        PRIMARY KEY (run_id, shard)
    );
    """,
    # 12: which header of a 429 gave the delay a retry waited (retry-after, llm_provider-retry-after,
    # x-ratelimit-reset-requests, ...); NULL when the refusal carried no hint
    """
    ALTER TABLE failed_attempts ADD COLUMN retry_after_source TEXT;
    """,
    # 13: requests of a load segment dropped unsent (due more than a second before the client could send them):
    # counted, never stored one by one (100,000/s of them would be the run's whole cost)
    """
    ALTER TABLE load_segments ADD COLUMN dropped INTEGER NOT NULL DEFAULT 0;
    """,
    # 14: the counts a concurrency verdict is derived from (issue 19), so a stored readout is re-derived by the rules
    # of the day when read; NULL in rows stored before (then estimated from the stored shares, where possible)
    """
    ALTER TABLE tuning_levels ADD COLUMN attempts INTEGER;
    ALTER TABLE tuning_levels ADD COLUMN rate_limited INTEGER;
    ALTER TABLE tuning_levels ADD COLUMN transient INTEGER;
    ALTER TABLE tuning_levels ADD COLUMN retries INTEGER;
    ALTER TABLE tuning_levels ADD COLUMN latencies INTEGER;
    ALTER TABLE tuning_levels ADD COLUMN cap INTEGER;
    """,
    # 15: repeated load runs (`arena load --repeat N --every/--at`) linked as one series; a bake-off's decision
    # (its whole page, as JSON) kept with the sweep it judged, so `arena bakeoff --show` reads it again
    """
    ALTER TABLE runs ADD COLUMN series_id TEXT;
    CREATE INDEX runs_series ON runs (series_id);
    CREATE TABLE bakeoff_decisions (
        run_id TEXT PRIMARY KEY,
        made_at REAL NOT NULL,
        load_runs TEXT NOT NULL,
        page_json TEXT NOT NULL
    );
    """,
    # 16: a timed-out streamed attempt's first token (issue 27: hung or slow?): when it came, in ms; NULL when none
    # came, or the attempt was not a streamed timeout (failed_attempts.stream says which: 1 streamed, NULL not)
    """
    ALTER TABLE failed_attempts ADD COLUMN ttft_ms REAL;
    ALTER TABLE failed_attempts ADD COLUMN stream INTEGER;
    """,
    # 17: prompt variants ([[prompts]]): a result's identity is (run, model, variant, case, trial), '' the variant of
    # every run without any; repairs and escalations ([run] repair, escalate_to): how many repair turns a call took,
    # which model answered after an escalation, whether its first answer passed, and every step of such a call kept
    # (call_steps), so a resumed run goes on where the chain stopped. The primary keys change: tables rebuilt.
    """
    CREATE TABLE results_v (
        run_id TEXT NOT NULL,
        model_key TEXT NOT NULL,
        case_id TEXT NOT NULL,
        trial INTEGER NOT NULL,
        status TEXT NOT NULL,
        output TEXT,
        score REAL,
        passed INTEGER NOT NULL,
        error_class TEXT,
        error_message TEXT,
        attempts INTEGER NOT NULL,
        latency_ms REAL,
        total_ms REAL NOT NULL,
        ttft_ms REAL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cost REAL NOT NULL,
        finish_reason TEXT,
        tokens_estimated INTEGER NOT NULL DEFAULT 0,
        started_at REAL NOT NULL,
        finished_at REAL NOT NULL,
        connect_ms REAL,
        failure_mode TEXT,
        score_detail TEXT,
        http_status INTEGER,
        repairs INTEGER NOT NULL DEFAULT 0,
        escalated_to TEXT,
        first_passed INTEGER,
        variant TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (run_id, model_key, variant, case_id, trial)
    );
    INSERT INTO results_v (run_id, model_key, case_id, trial, status, output, score, passed, error_class,
        error_message, attempts, latency_ms, total_ms, ttft_ms, input_tokens, output_tokens, cost,
        finish_reason, tokens_estimated, started_at, finished_at, connect_ms, failure_mode, score_detail,
        http_status)
        SELECT run_id, model_key, case_id, trial, status, output, score, passed, error_class, error_message,
            attempts, latency_ms, total_ms, ttft_ms, input_tokens, output_tokens, cost, finish_reason,
            tokens_estimated, started_at, finished_at, connect_ms, failure_mode, score_detail, http_status
            FROM results;
    DROP TABLE results;
    ALTER TABLE results_v RENAME TO results;
    CREATE TABLE judgments_v (
        run_id TEXT NOT NULL,
        model_key TEXT NOT NULL,
        case_id TEXT NOT NULL,
        trial INTEGER NOT NULL,
        judge_key TEXT NOT NULL,
        status TEXT NOT NULL,
        score REAL,
        passed INTEGER NOT NULL,
        error_class TEXT,
        error_message TEXT,
        output TEXT,
        attempts INTEGER NOT NULL,
        latency_ms REAL,
        total_ms REAL NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cost REAL NOT NULL,
        started_at REAL NOT NULL,
        finished_at REAL NOT NULL,
        score_detail TEXT,
        variant TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (run_id, model_key, variant, case_id, trial)
    );
    INSERT INTO judgments_v (run_id, model_key, case_id, trial, judge_key, status, score, passed, error_class,
        error_message, output, attempts, latency_ms, total_ms, input_tokens, output_tokens, cost, started_at,
        finished_at, score_detail)
        SELECT run_id, model_key, case_id, trial, judge_key, status, score, passed, error_class,
            error_message, output, attempts, latency_ms, total_ms, input_tokens, output_tokens, cost,
            started_at, finished_at, score_detail FROM judgments;
    DROP TABLE judgments;
    ALTER TABLE judgments_v RENAME TO judgments;
    ALTER TABLE failed_attempts ADD COLUMN variant TEXT NOT NULL DEFAULT '';
    CREATE TABLE call_steps (
        run_id TEXT NOT NULL,
        model_key TEXT NOT NULL,
        variant TEXT NOT NULL DEFAULT '',
        case_id TEXT NOT NULL,
        trial INTEGER NOT NULL,
        step INTEGER NOT NULL,
        kind TEXT NOT NULL,
        answered_by TEXT NOT NULL,
        status TEXT NOT NULL,
        passed INTEGER NOT NULL,
        score REAL,
        failure_mode TEXT,
        error_class TEXT,
        error_message TEXT,
        score_detail TEXT,
        output TEXT,
        attempts INTEGER NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cost REAL NOT NULL,
        total_ms REAL NOT NULL,
        latency_ms REAL,
        started_at REAL NOT NULL,
        finished_at REAL NOT NULL,
        PRIMARY KEY (run_id, model_key, variant, case_id, trial, step)
    );
    """,
    # 18: the code_exec sandbox a run's answers ran in (what start-up said), and whether it was the strong one
    """
    ALTER TABLE runs ADD COLUMN sandbox TEXT;
    ALTER TABLE runs ADD COLUMN sandbox_strong INTEGER;
    """,
    # 19: reasoning models (tokens, whether estimated, the first answer token after the reasoning, the reasoning
    # itself, capped) and the rate limits providers declared during a run
    """
    ALTER TABLE results ADD COLUMN reasoning_tokens INTEGER;
    ALTER TABLE results ADD COLUMN reasoning_estimated INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE results ADD COLUMN answer_ttft_ms REAL;
    ALTER TABLE results ADD COLUMN reasoning TEXT;
    CREATE TABLE declared_limits (
        run_id TEXT NOT NULL,
        model_key TEXT NOT NULL,
        at REAL NOT NULL,
        requests_limit INTEGER,
        requests_remaining INTEGER,
        requests_reset_s REAL,
        tokens_limit INTEGER,
        tokens_remaining INTEGER,
        tokens_reset_s REAL,
        PRIMARY KEY (run_id, model_key)
    );
    """,
    # 20: what a running run publishes once a second (arena watch reads it: calls in flight, levels, the tuner,
    # which process on which host), and requests to steer it (arena control, the watcher's keys) with its answers
    """
    CREATE TABLE live_state (
        run_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        shard TEXT,
        host TEXT,
        pid INTEGER,
        user TEXT,
        heartbeat_at REAL NOT NULL,
        state TEXT NOT NULL,
        target INTEGER,
        paused INTEGER NOT NULL DEFAULT 0,
        tuner INTEGER NOT NULL DEFAULT 0,
        models_json TEXT NOT NULL,
        tuning_json TEXT,
        extra_json TEXT
    );
    CREATE TABLE control_requests (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL,
        asked_at REAL NOT NULL,
        action TEXT NOT NULL,
        value INTEGER,
        model_key TEXT,
        host TEXT,
        pid INTEGER,
        user TEXT,
        status TEXT NOT NULL DEFAULT 'pending',
        reply TEXT,
        done_at REAL
    );
    CREATE INDEX control_requests_run ON control_requests (run_id, id);
    """,
    # 21: the command that started a sweep (run, evaluate, demo, bench), so `arena runs` tells a console run from a
    # headless one (issue 37 item 10); NULL in runs recorded before, which read as they did ('run' or 'demo')
    """
    ALTER TABLE runs ADD COLUMN started_by TEXT;
    """,
)
JUDGMENT_COLUMNS: tuple[str, ...] = (
    "run_id", "model_key", "case_id", "trial", "judge_key", "status", "score", "passed", "error_class",
    "error_message", "output", "attempts", "latency_ms", "total_ms", "input_tokens", "output_tokens", "cost",
    "started_at", "finished_at", "score_detail", "variant",
)
