"""The sample's version, apart from its generator: checking that a built sample is current (every start of the
Space on the sample, `madqa setup`) must not import the generator, which imports PyMuPDF (about a second)."""

#: Version of the generated sample; bump whenever the output bytes change.
SAMPLE_VERSION = "1.0.0"
