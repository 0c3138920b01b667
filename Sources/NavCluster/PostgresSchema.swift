/// The tables and functions navd keeps in PostgreSQL (cluster mode). Created at a node's start
/// under an advisory lock, so nodes starting together do not race; `CREATE OR REPLACE` keeps the
/// functions current with the navd that starts.
///
/// - `navd_nodes`: one row per node: where it listens, its incarnation (+1 at every start: the
///   fencing token of everything it writes) and when its lease expires. The owner renews it.
/// - `navd_sessions`: a session's tree, version, id counter and facts, with its owner node and
///   epoch (+1 at every takeover). A session's lease is its owner's row: while that is unexpired
///   nobody else may take the session; every write checks node, incarnation, lease and epoch.
/// - `navd_keys`: the replies of keyed navigations, written with their commit.
/// - `navd_tab_layouts`: the tabs each graph a node served declares (``TabLayout``), by an id made
///   from them; each session row names the layout of the graph it was written under (`tabs`), so a
///   node whose graph moved tabs refuses the trees holding them instead of showing a tab as another.
enum PostgresSchema {
    static let version = 1

    static let setup: [String] = [
        "SET client_min_messages TO warning",
        "SELECT pg_advisory_lock(7173900)",
        """
        CREATE TABLE IF NOT EXISTS navd_nodes (
            node text PRIMARY KEY, socket text NOT NULL, incarnation bigint NOT NULL, expires timestamptz NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS navd_sessions (
            name text PRIMARY KEY, version bigint NOT NULL, next_id bigint NOT NULL, tree text NOT NULL,
            facts text NOT NULL, uid bigint, node text NOT NULL, epoch bigint NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS navd_keys (
            session text NOT NULL, key text NOT NULL, seq bigint GENERATED ALWAYS AS IDENTITY,
            reply text NOT NULL, PRIMARY KEY (session, key))
        """,
        "CREATE INDEX IF NOT EXISTS navd_keys_by_session ON navd_keys (session, seq)",
        "CREATE TABLE IF NOT EXISTS navd_tab_layouts (id text PRIMARY KEY, layout text NOT NULL)",
        // Rows written before navd recorded layouts have none (NULL): their tabs are checked by count.
        "ALTER TABLE navd_sessions ADD COLUMN IF NOT EXISTS tabs text",
        // navd_claim answers each row's layout since: a function whose result changes is made anew.
        """
        DO $$ BEGIN
            IF EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'navd_claim' AND NOT ('o_tabs' = ANY (proargnames))) THEN
                DROP FUNCTION navd_claim(text, bigint, int, boolean, int, text);
            END IF;
        END $$
        """,
        "CREATE INDEX IF NOT EXISTS navd_sessions_by_node ON navd_sessions (node)",
        // One group commit: fails whole (and writes nothing) unless the node still holds its lease at
        // its incarnation and every session is still its own at the epoch it holds.
        """
        CREATE OR REPLACE FUNCTION navd_commit(p_node text, p_inc bigint, doc json) RETURNS void
        LANGUAGE plpgsql AS $$
        DECLARE r record; n bigint; inc bigint; live boolean; cut bigint;
        BEGIN
            -- FOR SHARE: a process registering under this name (a new incarnation) waits for the
            -- commit, then claims the sessions as it left them.
            SELECT incarnation, expires > clock_timestamp() INTO inc, live FROM navd_nodes WHERE node = p_node FOR SHARE;
            IF NOT FOUND OR inc <> p_inc THEN
                RAISE EXCEPTION 'node % is at incarnation %, not %: another process registered under its name', p_node, inc, p_inc USING ERRCODE = 'NV001';
            END IF;
            IF NOT live THEN
                RAISE EXCEPTION 'the lease of node % had expired', p_node USING ERRCODE = 'NV003';
            END IF;
            -- The layout the rows below name, sent with the first commit after a graph reload.
            IF doc->'l' IS NOT NULL THEN
                INSERT INTO navd_tab_layouts (id, layout) VALUES (doc->'l'->>'id', doc->'l'->>'layout') ON CONFLICT DO NOTHING;
            END IF;
            FOR r IN SELECT value AS name FROM json_array_elements_text(doc->'c') LOOP
                DELETE FROM navd_sessions WHERE name = r.name AND node = p_node;
                DELETE FROM navd_keys WHERE session = r.name;
                PERFORM pg_notify('navd_owners', json_build_object('s', r.name, 'n', NULL)::text);
            END LOOP;
            FOR r IN SELECT * FROM json_to_recordset(doc->'s')
                AS t(n text, v bigint, i bigint, t json, f json, u bigint, e bigint, b json, new boolean, g text) LOOP
                INSERT INTO navd_sessions AS s (name, version, next_id, tree, facts, uid, node, epoch, tabs)
                    VALUES (r.n, r.v, r.i, r.t::text, r.f::text, r.u, p_node, r.e, r.g)
                    ON CONFLICT (name) DO UPDATE SET version = r.v, next_id = r.i, tree = r.t::text, facts = r.f::text, uid = r.u, tabs = r.g
                    WHERE s.node = p_node AND s.epoch = r.e;
                GET DIAGNOSTICS n = ROW_COUNT;
                IF n = 0 THEN
                    RAISE EXCEPTION 'session % is not owned by node % at epoch %', r.n, p_node, r.e USING ERRCODE = 'NV002';
                END IF;
                IF r.new THEN PERFORM pg_notify('navd_owners', json_build_object('s', r.n, 'n', p_node)::text); END IF;
                PERFORM pg_notify('navd_changes', x) FROM json_array_elements_text(r.b) AS x;
            END LOOP;
            INSERT INTO navd_keys (session, key, reply)
                SELECT k.s, k.k, k.r FROM json_to_recordset(doc->'k') AS k(s text, k text, r text)
                ON CONFLICT DO NOTHING;
            -- Sessions are cut back to their newest 4,096 keys: those the node names in `x` (it
            -- counts what each holds, and names one past 4,096 + a slack, so that the cut, which
            -- reads 4,096 index entries, runs once per slack of keys); without `x` (a navd before
            -- it), every session this commit wrote keys for.
            FOR r IN SELECT value AS name FROM json_array_elements_text(doc->'x') WHERE doc->'x' IS NOT NULL
                     UNION ALL
                     SELECT DISTINCT x.s FROM json_to_recordset(doc->'k') AS x(s text) WHERE doc->'x' IS NULL LOOP
                SELECT y.seq INTO cut FROM navd_keys y WHERE y.session = r.name ORDER BY y.seq DESC LIMIT 1 OFFSET 4096;
                IF FOUND THEN DELETE FROM navd_keys WHERE session = r.name AND seq <= cut; END IF;
            END LOOP;
        END $$
        """,
        // Claims sessions and returns them whole (keys included), at most p_limit, and no more
        // once those taken hold p_key_budget keys (at least one is taken): a large claim comes in
        // batches that are each one query well within the lease. With p_own, the node's own named
        // after p_after (in bytes' order: navd asks for the next batch after the last name it got;
        // at its start, or when it reads them again), waiting for rows a commit of its previous
        // incarnation still holds; else those whose owner's lease expired, skipping rows another
        // node is claiming or committing. Every claim raises the session's epoch.
        """
        CREATE OR REPLACE FUNCTION navd_claim(p_node text, p_inc bigint, p_limit int, p_own boolean, p_key_budget int, p_after text)
        RETURNS TABLE (o_name text, o_version bigint, o_next_id bigint, o_tree text, o_facts text, o_uid bigint, o_epoch bigint, o_keys json,
                       o_tabs text, o_layout text)
        LANGUAGE plpgsql AS $$
        #variable_conflict use_column
        DECLARE c record; taken text[] := '{}'; held bigint := 0;
        BEGIN
            PERFORM 1 FROM navd_nodes WHERE node = p_node AND incarnation = p_inc;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'node % is no longer at incarnation %', p_node, p_inc USING ERRCODE = 'NV001';
            END IF;
            -- Rows are locked as they are read: those past the budget stay free.
            IF p_own THEN
                FOR c IN SELECT x.name FROM navd_sessions x WHERE x.node = p_node AND x.name COLLATE "C" > p_after
                    ORDER BY x.name COLLATE "C" LIMIT p_limit FOR UPDATE LOOP
                    EXIT WHEN held >= p_key_budget;
                    taken := taken || c.name;
                    held := held + (SELECT count(*) FROM navd_keys k WHERE k.session = c.name);
                END LOOP;
            ELSE
                FOR c IN SELECT x.name FROM navd_sessions x
                    WHERE x.node <> p_node AND NOT EXISTS (
                        SELECT 1 FROM navd_nodes n WHERE n.node = x.node AND n.expires > clock_timestamp())
                    ORDER BY x.name LIMIT p_limit FOR UPDATE SKIP LOCKED LOOP
                    EXIT WHEN held >= p_key_budget;
                    taken := taken || c.name;
                    held := held + (SELECT count(*) FROM navd_keys k WHERE k.session = c.name);
                END LOOP;
            END IF;
            FOR c IN UPDATE navd_sessions s SET node = p_node, epoch = s.epoch + 1
                WHERE s.name = ANY(taken)
                RETURNING s.* LOOP
                o_name := c.name; o_version := c.version; o_next_id := c.next_id; o_tree := c.tree;
                o_facts := c.facts; o_uid := c.uid; o_epoch := c.epoch;
                o_keys := (SELECT coalesce(json_agg(json_build_array(k.key, k.reply) ORDER BY k.seq), '[]'::json)
                           FROM navd_keys k WHERE k.session = c.name);
                o_tabs := c.tabs;
                o_layout := (SELECT l.layout FROM navd_tab_layouts l WHERE l.id = c.tabs);
                IF NOT p_own THEN PERFORM pg_notify('navd_owners', json_build_object('s', c.name, 'n', p_node)::text); END IF;
                RETURN NEXT;
            END LOOP;
        END $$
        """,
        // Renews the node's lease and answers every node: name, socket, milliseconds of lease left.
        """
        CREATE OR REPLACE FUNCTION navd_renew(p_node text, p_inc bigint, p_lease_ms int) RETURNS json
        LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE navd_nodes SET expires = clock_timestamp() + p_lease_ms * interval '1 millisecond'
                WHERE node = p_node AND incarnation = p_inc;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'node % is no longer at incarnation %', p_node, p_inc USING ERRCODE = 'NV001';
            END IF;
            RETURN (SELECT json_agg(json_build_array(node, socket,
                        greatest(0, (extract(epoch FROM expires - clock_timestamp()) * 1000)::bigint)))
                    FROM navd_nodes);
        END $$
        """,
        "SELECT pg_advisory_unlock(7173900)",
    ]

    /// Registers a node (a new incarnation each start) and answers its incarnation.
    static let register = """
        INSERT INTO navd_nodes (node, socket, incarnation, expires)
        VALUES ($1, $2, 1, clock_timestamp() + $3::int * interval '1 millisecond')
        ON CONFLICT (node) DO UPDATE SET socket = excluded.socket, incarnation = navd_nodes.incarnation + 1,
            expires = excluded.expires
        RETURNING incarnation
        """

    /// A new session owned by the node (epoch 1), unless it exists: answers its name if made.
    static let createSession = """
        INSERT INTO navd_sessions (name, version, next_id, tree, facts, uid, node, epoch, tabs)
        VALUES ($1, $2::bigint, $3::bigint, $4, '{}', NULL, $5, 1, $6) ON CONFLICT (name) DO NOTHING RETURNING name
        """
    static let commit = "SELECT navd_commit($1, $2::bigint, $3::json)"
    static let claim = "SELECT * FROM navd_claim($1, $2::bigint, $3::int, $4::boolean, $5::int, $6::text)"
    static let renew = "SELECT navd_renew($1, $2::bigint, $3::int)"
    static let directory = "SELECT name, node FROM navd_sessions"
    static let owner = "SELECT node FROM navd_sessions WHERE name = $1"
    static let readSession = """
        SELECT s.name, s.version, s.next_id, s.tree, s.facts, s.uid, s.node, s.tabs, l.layout
        FROM navd_sessions s LEFT JOIN navd_tab_layouts l ON l.id = s.tabs WHERE s.name = $1
        """
    /// Records the tabs a graph declares under their id (once: the same tabs, the same id).
    static let saveLayout = "INSERT INTO navd_tab_layouts (id, layout) VALUES ($1, $2) ON CONFLICT DO NOTHING"
}
