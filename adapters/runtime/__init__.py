"""Runtimes that drive the use cases: the service executor's loop and its streaming
uploads, the restore runner, the blocking view for synchronous callers, and the thread
helpers they share. The use cases themselves (``ports/driving``) run no loop and no
thread."""
