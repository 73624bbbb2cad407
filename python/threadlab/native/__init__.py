"""The native programs from Python: where they are and how a program is
asked (discovery), the native protocol (protocol), every child process
(process), the MPI launchers (launcher), the resource manager's control
(rm)."""
