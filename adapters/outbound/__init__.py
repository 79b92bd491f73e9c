"""The one outbound-connection policy (contract 13): resolve, unwrap, judge, connect with
a fixed time budget, report one fixed message per stage. Every path that connects on a
customer's behalf (cloud sources, customer destinations, restore targets; webhooks next)
goes through ``Outbound``."""
