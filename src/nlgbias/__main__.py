"""``python -m nlgbias`` is the same as the ``nlgbias`` command."""

from nlgbias.cli import main

if __name__ == "__main__":
    main()
