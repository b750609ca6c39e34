-- Live nodes (issue 12): every lease cycle records its node in the same transaction; a node
-- is live while last_cycle + lease is in the future, by the database's clock. A clean
-- shutdown deletes the row in its releasing transaction.
CREATE TABLE copier_nodes (
    node_id    text        PRIMARY KEY,
    platform   text        NOT NULL,
    capacity   integer     NOT NULL,
    owned      integer     NOT NULL DEFAULT 0, -- after its last cycle
    share      integer     NOT NULL DEFAULT 0, -- its fair share at its last cycle
    handoffs   bigint      NOT NULL DEFAULT 0, -- accounts handed back to balance the platform
    lease      interval    NOT NULL,
    last_cycle timestamptz NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX copier_nodes_platform_idx ON copier_nodes (platform);
