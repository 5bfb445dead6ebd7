"""The reports the commands write, one module per report: each turns a service's result into
text, Markdown, HTML or JUnit XML and computes nothing."""
