-- An index for the owner's FIX position book (store/fixbook.go), which finds its account by
-- platform and login: the unique key (platform, server, login) cannot serve that lookup, so
-- every fill's book write looked at all the node's owned rows (node_id) and every read
-- scanned fix_positions (TestFencedWritesStayLinearWhateverTheStatistics). Neither column
-- changes when a lease is renewed, so renewals stay HOT.
CREATE INDEX trading_accounts_platform_login_idx ON trading_accounts (platform, login);
