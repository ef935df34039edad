"""The keys every report of ``evaluate`` carries, in Python and on the command line alike."""

REPORT_KEYS = frozenset(
    {
        "accuracy",
        "accuracy_raw",
        "accuracy_ci",
        "anls",
        "page_f1",
        "doc_f1",
        "kuiper",
        "kuiper_normalized",
        "kuiper_ci",
        "wasted_effort_ratio",
        "n",
        "n_predicted",
        "missing",
        "unscored",
        "by_hop",
        "by_domain",
        "by_category",
        "errors",
        "budget_curve",
        "mode",
    }
)
