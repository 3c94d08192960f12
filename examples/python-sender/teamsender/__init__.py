"""teamsender: a push sender for poolse, Yama and Concierge, written as a product team would
write theirs (Python's standard library, `curl` for HTTP/2, `openssl` for signing), with the
pushproof adapter in front of it. See ../README.md."""

NAME = "teamsender (python example)"
VERSION = "1.0.0"
