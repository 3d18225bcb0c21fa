"""``python -m genprob``: the ``genprob`` command line (:func:`genprob.app.cli.run`)."""

from genprob.app.cli import run

if __name__ == "__main__":
    run()
