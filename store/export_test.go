package store

// ClaimSQL is the claim statement, for plan tests.
const ClaimSQL = claimSQL
