"""The PF rules, one module each (`pfNNN_<name>.py`), and the helpers several of them share."""
