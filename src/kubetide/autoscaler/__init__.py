"""The autoscaler's decision logic. It talks to the world only through the ports in ports.py."""
