-- A copy is recognised by its link's magic number plus the mc<masterTicket> marker: two
-- links into one follower with one magic would make a copy ambiguous. Refuse to migrate
-- while such a clash exists (SQLSTATE CP001, mapped to store.ErrMagicClash), naming it.
DO $$
DECLARE
    clash text;
BEGIN
    SELECT string_agg(format('follower %s: magic %s on links %s', follower_id, magic, ids), '; ')
      INTO clash
      FROM (SELECT follower_id, magic, string_agg(id::text, ', ' ORDER BY id) AS ids
              FROM copy_links GROUP BY follower_id, magic HAVING count(*) > 1
             ORDER BY follower_id, magic LIMIT 20) c;
    IF clash IS NOT NULL THEN
        RAISE EXCEPTION 'links into one follower share a magic number: %', clash
            USING ERRCODE = 'CP001',
                  HINT = 'give each link of a follower its own magic (console, or UPDATE copy_links SET magic = ... WHERE id = ...), then migrate again';
    END IF;
END
$$;

ALTER TABLE copy_links ADD CONSTRAINT copy_links_follower_magic_key UNIQUE (follower_id, magic);
