"""Test support shared by the Flow packages' suites (unpublished; see ``tests/support``).

- :mod:`flow_testing.model_server`: one loopback fake model server (Ollama's ``/api/*`` and
  OpenAI's ``/v1/*`` routes), scripted or replaying canned replies.
- :mod:`flow_testing.nvim`: one real headless Neovim per test, with a user connection.
- :mod:`flow_testing.reports`: two reports of the same run made comparable.
- :mod:`flow_testing.gitrepo`: ``git(cwd, *args)``, real git with a fixed identity.
- :mod:`flow_testing.replies`: ``call``, ``text``, ``review``, the replies a ``ScriptedBackend``
  script is made of (imports ``flow_core``: only for suites of packages that depend on it).
- :mod:`flow_testing.editors`: ``RecordingEditor``, one editor-bridge double (files on disk or in
  memory, every call recorded; imports ``flow_core`` like ``replies``).
- :mod:`flow_testing.procs`: processes and process groups as ``/proc`` shows them (orphan checks).
- :mod:`flow_testing.testmap`: what a package's ``tests/README.md`` map misses or names wrongly.

No other module imports a Flow package, so a package's tests need no sibling beyond its own.
"""
