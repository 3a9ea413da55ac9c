"""Ray actors for the parties: the only package in ``parties`` that imports Ray.

Each party runs unchanged inside a :class:`PartyHost` actor. A host can be
loaded with a new party at any time, which replaces the old party object and
so resets all its state; a study keeps its hosts across cells and skips the
start-up of new actor processes. Hosts ask for no CPU of their own
(``num_cpus=0``): parties mostly wait for messages.

Clusters
--------
:func:`ensure_ray` starts a private Ray instance, or joins a cluster only when given an
address; it checks the address first (one :class:`ClusterError` within
:data:`CONNECT_TIMEOUT_S` for a wrong one or a refused token), sends this machine's Ray
token, and ships parley to the workers (:func:`cluster_runtime_env`). Hosts run on the
node of the process that creates them (the driver, or a study worker), so the ledger a
party writes lies where that process reads it (docs/design.md, "Clusters").

Restarts
--------
A party is a state machine driven only by the calls the deployment makes (every
message it receives, every step a flow asks of it), so its state can be rebuilt:
:class:`RayDeployment` journals each call a party completed, and when its host
dies (a crash, or ``ray.kill(host, no_restart=False)``) Ray restarts the host
(``max_restarts``), the deployment loads the party again from the same
arguments, replays the journal into it (each call drawing the query ids it drew
the first time, :mod:`parley.parties.ids`), tells it it was restarted
(:meth:`parley.parties.party.Party.resume`) and retries the call that failed. Nothing
of the replay goes on the wire: the replies it produces are dropped (they were
delivered the first time). What must survive beyond the journal survives on
disk: the compliance party's ledger file is reopened, so a retried or replayed
query is answered from its record (same values, no new debit), and the keys are
the load arguments themselves. A host that cannot be restarted is replaced by
a new actor; a call that loses its party more than :data:`RECOVERIES_PER_CALL`
times stops the run with :class:`PartyLostError`.

Pipelining
----------
:meth:`RayDeployment.submit` starts a call and returns a :class:`Pending` handle (``call`` submits the
same way and waits at once). Ray runs one caller's calls to an actor in submission order, and the
deployment settles them in that order: each is journaled when its outcome is known, and a crash
with calls under way restores the party from the calls settled before it and sends the rest again
(after every one sent to the dead host has failed, so none reaches the restored party twice).
Calls submitted while the host is busy wait and then travel together as one Ray task
(:meth:`PartyHost.call_batch`), each run as a call of its own.

The journal keeps nothing large in the driver's memory (a driver that kept every
call's arguments grew by the size of everything it ever sent). An envelope the
network logged is journaled as its place in ``transcript.jsonl``
(:class:`LoggedEnvelope`: path, byte offset, length, envelope id): the transcript
already holds it byte for byte, and a restore reads it back from there. Every
other argument is pickled into a journal file per party on the driver's node
(a temporary folder, removed at :meth:`RayDeployment.shutdown`; arrays out of band, written by a
thread of their own while the party works), and the driver keeps only the file's
length. The host, which runs on the same node, reads both
files itself during a restore, so nothing of the replay passes through the
driver either.

Its modules, one job each: :mod:`~parley.parties.ray.cluster` (a private Ray instance, or joining a
cluster), :mod:`~parley.parties.ray.hosts` (the :class:`~parley.parties.ray.hosts.PartyHost` actors),
:mod:`~parley.parties.ray.journal` (the restore journal and its writer thread) and
:mod:`~parley.parties.ray.deployment` (:class:`~parley.parties.ray.deployment.RayDeployment`: calls,
pipelining, restarts). Import from them; this package imports nothing.
"""
