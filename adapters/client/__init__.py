"""The client side of Strongroom: what runs on the customer's machine."""
