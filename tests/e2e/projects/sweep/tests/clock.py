"""A clock the tests share within one interpreter, as a time-freezing library keeps one."""
FROZEN = {"at": None}
