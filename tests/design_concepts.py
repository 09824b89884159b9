"""The concept ids design.md §5 requires the catalog to cover: the contract both data tests check."""

# The contract: every concept of design.md §5 ("Concepts the catalog must cover") has a rule file.
DESIGN_CONCEPTS = {
    # coverage
    "sibling-variant-unfixed", "shared-path-unvalidated", "activation-broader-than-validated",
    # bypass
    "gated-param-ignored", "unmasked-triton-access", "phase-size-proxy", "cudagraph-capture-break",
    "string-dispatch-unnormalized", "new-dispatch-value-unhandled", "constexpr-check-disabled",
    "api-propagation-incomplete", "over-conservative-assert",
    # arch-dtype
    "fnuz-by-arch-name", "fp8-max-hardcoded", "dtype-hardcoded", "arch-literal-in-dispatch",
    # state (and the FlyDSL rules of the state row)
    "atomic-on-uninitialized", "conditional-binding", "default-swap-without-rollback",
    "hipblaslt-in-tuning-config", "invariant-reversal", "backbone-verbatim-duplication",
    "fake-impl-mismatch", "fake-impl-missing", "contiguity-unchecked", "int32-index-overflow",
    "flydsl-compile-not-called", "flydsl-bitcast-unwrap", "pinned-struct-abi-shift",
    # sync (cross-repo)
    "aiter-usage-unlinked", "defaulted-param-dead", "plugin-bridge-stale", "downstream-ci-skipped",
    "core-api-owner-signoff",
    # resources
    "weight-variant-double-pin",
    # streams
    "stream-sync-missing", "queue-get-no-timeout",
    # perf-evidence
    "perf-claim-no-numbers", "perf-toy-shapes", "perf-not-reproducible", "tp-split-shapes",
    "perf-hidden-recurring-cost", "perf-unmeasured",
    # housekeeping
    "temp-script", "unrelated-files", "syspath-mutation", "bugfix-without-test", "kpack1-on-gfx950",
    "nth-op-variant", "new-op-without-test", "incomplete-code", "develop-flag", "env-var-knob",
    "test-reference-dtype-promotion", "new-dependency", "test-never-run", "uncollectable-test",
    # triton
    "masked-load-without-other", "launch-config-unretuned", "amd-launch-knobs",
    "accumulator-precision", "grid-program-id-mismatch",
    # description
    "what-not-why", "suspiciously-clean-ratio", "screenshot-only-perf", "toy-shape-tests",
    "template-left-empty", "ai-attribution-footer", "unlinked-issue-root-cause",
    # structure (AI diagnostic)
    "hallucinated-symbol", "twin-divergence", "removed-guard", "safety-theater",
    "test-cannot-fail", "magic-constant",
    # process
    "backbone-tier-gap", "stale-diff", "ci-failure-classification",
}
