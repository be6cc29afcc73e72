"""The PP rules, one module each (`ppNNN_<name>.py`), and the helpers several of them share."""
