"""Producers of threadlab records that are not C programs: the JVM suite
(JMH, launched and converted by jmh.py) and what it needs (jdk.py finds a
JDK, limits.py reads the machine's thread limits).  The Go suite is a Go
program (go/) that prints records itself.  Both speak the native protocol
(docs/native-protocol.md), so `threadlab bench` runs them like any other
program; see docs/jvm.md and docs/go.md."""
