"""The packed-modules rules, one `pm<NNN>_<name>.py` each, and the helper they share (`packing`)."""
