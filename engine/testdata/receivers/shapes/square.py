from .base import Reader, Shape


class Square(Shape):
    def __init__(self, side=2):
        self.side = side

    def area(self):
        return self.side ** 2


class Lines(Reader):
    def __init__(self, text: str):
        self.lines = list(text)


class Config:
    def __init__(self):
        self.speed = 3
